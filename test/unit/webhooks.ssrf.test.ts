import { describe, expect, it } from '@jest/globals';

import { isPublicAddress } from '../../shared/webhooks/ssrf.ts';
import { defaultWebhookPolicy, retryDelayMs } from '../../worker/webhooks/policy.ts';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.0.10',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '198.18.0.1',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
    '2001:db8::1',
    'not an ip',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
  ])('accepts %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('the retry schedule', () => {
  it('spreads eight attempts over about a day', () => {
    const total = defaultWebhookPolicy.retryDelaysMs.reduce((a, b) => a + b, 0);
    expect(defaultWebhookPolicy.retryDelaysMs).toHaveLength(7);
    expect(total / 3_600_000).toBeGreaterThan(24);
    expect(total / 3_600_000).toBeLessThan(30);
    expect(retryDelayMs(defaultWebhookPolicy, 1)).toBe(5_000);
    expect(retryDelayMs(defaultWebhookPolicy, 8)).toBeNull();
  });
});
