import dns from 'node:dns';
import net from 'node:net';

/**
 * Address ranges a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE is set: loopback, private
 * networks, link-local (incl. cloud metadata at 169.254.169.254), carrier-grade NAT, multicast,
 * "this network", benchmarking, documentation and reserved space, and their IPv6 counterparts.
 */
const blocked = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/** Is this address one a webhook may be sent to without WEBHOOK_ALLOW_PRIVATE? */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 0) return false;
  if (family === 6) {
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible forms are judged by their IPv4 address.
    const mapped = /^::(?:ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return isPublicAddress(mapped[1]!);
    const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
    if (hexMapped) {
      const high = parseInt(hexMapped[1]!, 16);
      const low = parseInt(hexMapped[2]!, 16);
      return isPublicAddress(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`);
    }
    return !blocked.check(address, 'ipv6');
  }
  return !blocked.check(address, 'ipv4');
}

/**
 * Raised when a webhook target (or a metadata document's host) is, or resolves to, an address it may
 * not reach. The address a name resolved to is not said: it would map the internal network for
 * whoever reads the refusal.
 */
export class BlockedTargetError extends Error {
  readonly code = 'webhook_target_blocked';
  constructor(host: string) {
    super(`webhook target ${host} is not a public address (a private, loopback or reserved address)`);
    this.name = 'BlockedTargetError';
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | dns.LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for http.request that resolves the host and refuses blocked addresses. The socket then
 * connects to exactly the address that was checked, so a second DNS answer (DNS rebinding) cannot
 * slip a private address in between the check and the connection.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as dns.LookupAddress[];
      const bad = allowPrivate ? undefined : list.find((a) => !isPublicAddress(a.address));
      if (bad) return callback(new BlockedTargetError(hostname) as NodeJS.ErrnoException, []);
      if (list.length === 0) {
        return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      }
      if (options.all) return callback(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}
