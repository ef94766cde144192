import { describe, expect, it } from '@jest/globals';

import { redact } from '../../api/requestLog.ts';
import { newKeySecret, randomBase62 } from '../../shared/ids.ts';

describe('redact', () => {
  it('masks secrets at any depth and cuts long strings', () => {
    const out = redact({
      prompt: 'hello',
      client_secret: 'x',
      headers: { Authorization: 'Bearer y' },
      list: [{ refresh_token: 'z' }],
      data: 'a'.repeat(2000),
    });
    expect(out).toEqual({
      prompt: 'hello',
      client_secret: '[redacted]',
      headers: { Authorization: '[redacted]' },
      list: [{ refresh_token: '[redacted]' }],
      data: `${'a'.repeat(200)}…[2000 chars]`,
    });
  });
});

describe('ids', () => {
  it('mints keys with at least 190 bits of base62 randomness', () => {
    const test = newKeySecret(false);
    expect(test).toMatch(/^svc_sk_test_[0-9A-Za-z]{33}$/);
    expect(newKeySecret(true)).toMatch(/^svc_sk_live_[0-9A-Za-z]{33}$/);
    expect(33 * Math.log2(62)).toBeGreaterThan(190);
    expect(new Set(Array.from({ length: 1000 }, () => randomBase62(12))).size).toBe(1000);
  });
});
