import { describe, expect, it } from '@jest/globals';

import { ipAllowed, isValidCidr } from '../../shared/keys/ipAllowlist.ts';

describe('ipAllowed', () => {
  it('allows everyone when the list is empty', () => {
    expect(ipAllowed('203.0.113.9', [])).toBe(true);
    expect(ipAllowed(undefined, [])).toBe(true);
  });

  it('matches IPv4 and IPv6 CIDRs and single addresses', () => {
    const list = ['10.0.0.0/8', '192.0.2.7', '2001:db8::/48'];
    expect(ipAllowed('10.255.1.2', list)).toBe(true);
    expect(ipAllowed('192.0.2.7', list)).toBe(true);
    expect(ipAllowed('192.0.2.8', list)).toBe(false);
    expect(ipAllowed('2001:db8:0:ffff::1', list)).toBe(true);
    expect(ipAllowed('2001:db8:1::1', list)).toBe(false);
    expect(ipAllowed(undefined, list)).toBe(false);
  });

  it('treats IPv4-mapped IPv6 addresses as IPv4', () => {
    expect(ipAllowed('::ffff:10.1.2.3', ['10.0.0.0/8'])).toBe(true);
    expect(ipAllowed('::ffff:11.1.2.3', ['10.0.0.0/8'])).toBe(false);
  });
});

describe('isValidCidr', () => {
  it.each(['10.0.0.0/8', '127.0.0.1', '::1', '2001:db8::/32', '0.0.0.0/0'])('accepts %s', (cidr) => {
    expect(isValidCidr(cidr)).toBe(true);
  });
  it.each(['10.0.0.0/33', '::/129', 'example.com', '10.0.0.0/8/1', '10.0.0/8', '1.2.3.4/x', ''])(
    'refuses %s',
    (cidr) => {
      expect(isValidCidr(cidr)).toBe(false);
    },
  );
});
