import { describe, expect, it } from '@jest/globals';

import { redact, requestLogBodyBudgetBytes } from '../../api/requestLog/redact.ts';
import { newKeySecret, randomBase62 } from '../../shared/primitives/ids.ts';

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

  it('keeps token counts under any spelling, and masks credentials named like them', () => {
    const counts = {
      usage: { inputTokens: 12, outputTokens: 34, cachedInputTokens: null },
      maxTokens: 64,
      max_completion_tokens: 64,
      prompt_tokens_details: { cached_tokens: 5 },
      'total-tokens': 46,
      tokenCount: 9,
      tokens: 3,
    };
    expect(redact(counts)).toEqual(counts);
    expect(
      redact({
        token: 'a',
        access_token: 'b',
        idToken: 7,
        tokens: ['c'],
        access_tokens: 'd',
        secretTokens: 5,
        api_key_tokens: 6,
        prompt_tokens_details: { refresh_token: 'e', cached_tokens: 1 },
      }),
    ).toEqual({
      token: '[redacted]',
      access_token: '[redacted]',
      idToken: '[redacted]',
      tokens: '[redacted]',
      access_tokens: '[redacted]',
      secretTokens: '[redacted]',
      api_key_tokens: '[redacted]',
      prompt_tokens_details: { refresh_token: '[redacted]', cached_tokens: 1 },
    });
  });

  it('keeps a "__proto__" key as a key, as JSON.parse read it', () => {
    const out = redact(JSON.parse('{"__proto__":{"password":"p","input":"hidden?"}}'));
    expect(JSON.stringify(out)).toBe('{"__proto__":{"password":"[redacted]","input":"hidden?"}}');
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

describe('redact bounds', () => {
  const wide = Object.fromEntries(
    Array.from({ length: 20_000 }, (_, i) => [`${i}-${'k'.repeat(1000)}`, 'v']),
  );
  let deep: unknown = 'bottom';
  for (let i = 0; i < 200; i++) deep = { d: deep, l: [deep] };
  const shapes: Record<string, unknown> = {
    'many long keys': wide,
    'many long strings': Array.from({ length: 10_000 }, () => 'é'.repeat(5000)),
    'escapes that grow sixfold in JSON': Array.from({ length: 5000 }, () => '\u0001'.repeat(999)),
    'deep and wide': deep,
    'arrays of arrays': Array.from({ length: 100 }, () =>
      Array.from({ length: 100 }, () => ['x'.repeat(900)]),
    ),
    'objects of objects': Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [
        `k${i}`,
        Object.fromEntries(Array.from({ length: 100 }, (_, j) => [`j${j}`, 'y'.repeat(999)])),
      ]),
    ),
    numbers: Array.from({ length: 100_000 }, (_, i) => i * 1e300),
  };
  for (const [name, value] of Object.entries(shapes)) {
    it(`never exceeds the byte budget: ${name}`, () => {
      expect(jsonBytes(redact(value))).toBeLessThanOrEqual(requestLogBodyBudgetBytes);
    });
  }

  it('cuts long keys, caps keys and items, says what it left out', () => {
    const out = redact({
      [`${'a'.repeat(100)}`]: 1,
      list: Array.from({ length: 80 }, (_, i) => i),
    }) as Record<string, unknown>;
    expect(Object.keys(out)).toEqual([`${'a'.repeat(64)}…`, 'list']);
    const list = out.list as unknown[];
    expect(list).toHaveLength(51);
    expect(list.at(-1)).toBe('…[30 more items]');
    const keys = redact(Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, i]))) as Record<
      string,
      unknown
    >;
    expect(Object.keys(keys)).toHaveLength(51);
    expect(keys['…']).toBe('20 more keys');
  });

  it('masks secrets by key even when the key is cut, and our credential formats anywhere', () => {
    const out = redact({
      [`${'x'.repeat(80)}_password`]: 'hunter2',
      prompt: 'my key is svc_sk_live_abcdefghijklmnopqrstuvwxyz0123456',
      list: ['whsec_abc'],
    });
    const text = JSON.stringify(out);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('svc_sk_live_');
    expect(text).not.toContain('whsec_');
  });

  it('stops at six levels', () => {
    expect(redact({ a: { b: { c: { d: { e: { f: { g: 1 } } } } } } })).toEqual({
      a: { b: { c: { d: { e: { f: '[…]' } } } } },
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
