import net from 'node:net';

import type { TraceContextTrust } from '../../config/config.ts';

// proxy-addr's (Express's) names, as TRUST_PROXY takes them.
const namedRanges: Record<string, [string, number, 'ipv4' | 'ipv6'][]> = {
  loopback: [
    ['127.0.0.0', 8, 'ipv4'],
    ['::1', 128, 'ipv6'],
  ],
  linklocal: [
    ['169.254.0.0', 16, 'ipv4'],
    ['fe80::', 10, 'ipv6'],
  ],
  uniquelocal: [
    ['10.0.0.0', 8, 'ipv4'],
    ['172.16.0.0', 12, 'ipv4'],
    ['192.168.0.0', 16, 'ipv4'],
    ['fc00::', 7, 'ipv6'],
  ],
};

/** A prefix length, or a contiguous IPv4 netmask's (255.255.255.0 is 24). */
function prefixOf(range: string | undefined, family: 'ipv4' | 'ipv6'): number {
  if (range === undefined) return family === 'ipv6' ? 128 : 32;
  if (!net.isIPv4(range)) return Number(range);
  return range
    .split('.')
    .reduce((bits, octet) => bits + Number(octet).toString(2).replace(/0/g, '').length, 0);
}

/**
 * Whether a connection's peer address may set our trace context (TRACE_CONTEXT_TRUST): the entries
 * were validated when the config was read. IPv4-mapped IPv6 peers match IPv4 entries.
 */
export function makeTrustedPeer(trust: TraceContextTrust): (address: string | undefined) => boolean {
  if (trust === 'none') return () => false;
  if (trust === 'all') return () => true;
  const list = new net.BlockList();
  for (const entry of trust) {
    for (const [base, prefix, family] of namedRanges[entry] ?? []) list.addSubnet(base, prefix, family);
    if (namedRanges[entry]) continue;
    const [base = '', range] = entry.split('/');
    const family = net.isIPv6(base) ? 'ipv6' : 'ipv4';
    list.addSubnet(base, prefixOf(range, family), family);
  }
  return (address) => {
    if (address === undefined || net.isIP(address) === 0) return false;
    return list.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
  };
}
