import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../shared/config/config.ts';
import { makeTrustedPeer } from '../../shared/observability/tracing/trustedPeer.ts';

describe('makeTrustedPeer (TRACE_CONTEXT_TRUST)', () => {
  it('trusts nobody by default and everybody with all', () => {
    expect(loadConfig({}).traceContextTrust).toBe('none');
    expect(makeTrustedPeer('none')('127.0.0.1')).toBe(false);
    expect(makeTrustedPeer('all')('203.0.113.9')).toBe(true);
  });

  it('trusts the listed peers: names, addresses, prefixes and netmasks, IPv4-mapped IPv6 too', () => {
    const trusted = makeTrustedPeer(
      loadConfig({
        TRACE_CONTEXT_TRUST: 'loopback, 10.1.0.0/16, 192.0.2.7, 198.51.100.0/255.255.255.0, fd00::/8',
      }).traceContextTrust,
    );
    for (const peer of [
      '127.0.0.1',
      '::1',
      '::ffff:127.0.0.1',
      '10.1.200.3',
      '::ffff:10.1.0.1',
      '192.0.2.7',
      '198.51.100.44',
      'fd12::1',
    ]) {
      expect([peer, trusted(peer)]).toEqual([peer, true]);
    }
    for (const peer of [
      '10.2.0.1',
      '192.0.2.8',
      '198.51.101.1',
      'fe80::1',
      '203.0.113.9',
      undefined,
      'not-an-ip',
    ]) {
      expect([peer, trusted(peer)]).toEqual([peer, false]);
    }
  });

  it('refuses an entry that is not an address, a range or a range name at boot', () => {
    expect(() => loadConfig({ TRACE_CONTEXT_TRUST: 'loopback,proxy.internal' })).toThrow(
      /TRACE_CONTEXT_TRUST/,
    );
  });
});
