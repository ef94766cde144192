import net from 'node:net';

/** Strips the IPv4-mapped IPv6 prefix so `::ffff:10.0.0.1` matches a `10.0.0.0/8` entry. */
function normalize(ip: string): string {
  return ip.startsWith('::ffff:') && net.isIPv4(ip.slice(7)) ? ip.slice(7) : ip;
}

/** Is `ip` inside one of the CIDRs (IPv4 or IPv6; a bare address means a single host)? */
export function ipAllowed(ip: string | undefined, cidrs: string[]): boolean {
  if (cidrs.length === 0) return true;
  if (!ip) return false;
  const address = normalize(ip);
  const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
  const list = new net.BlockList();
  for (const cidr of cidrs) {
    const [base, bits] = cidr.split('/');
    if (!base) continue;
    const type = net.isIPv6(base) ? 'ipv6' : 'ipv4';
    const prefix = bits === undefined ? (type === 'ipv6' ? 128 : 32) : Number(bits);
    list.addSubnet(base, prefix, type);
  }
  return list.check(address, family);
}

/** Validates an allowlist entry for key creation. */
export function isValidCidr(cidr: string): boolean {
  const [base, bits, extra] = cidr.split('/');
  if (extra !== undefined || !base) return false;
  const version = net.isIP(base);
  if (version === 0) return false;
  if (bits === undefined) return true;
  const n = Number(bits);
  return /^\d+$/.test(bits) && n >= 0 && n <= (version === 6 ? 128 : 32);
}
