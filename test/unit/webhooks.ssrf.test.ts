import { describe, expect, it } from '@jest/globals';

import { isPublicAddress } from '../../shared/webhooks/ssrf.ts';
import { defaultWebhookPolicy, retryDelayMs } from '../../worker/webhooks/policy.ts';

describe('isPublicAddress', () => {
  it.each([
    ['127.0.0.1', false],
    ['127.8.9.10', false],
    ['10.1.2.3', false],
    ['172.16.0.1', false],
    ['172.31.255.255', false],
    ['192.168.0.10', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['0.0.0.0', false],
    ['224.0.0.1', false],
    ['255.255.255.255', false],
    ['198.18.0.1', false],
    ['::', false],
    ['::1', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['fd12:3456::1', false],
    ['ff02::1', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:10.0.0.1', false],
    ['64:ff9b::a00:1', false],
    ['2001:db8::1', false],
    ['not an ip', false],
    ['93.184.215.14', true],
    ['8.8.8.8', true],
    ['172.32.0.1', true],
    ['100.128.0.1', true],
    ['2606:4700:4700::1111', true],
    ['::ffff:8.8.8.8', true],
  ])('%s is public: %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
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
