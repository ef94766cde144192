import { describe, expect, it } from '@jest/globals';

import {
  defaultPrices,
  maxTextCost,
  parsePrices,
  publicUsage,
  textCost,
} from '../../shared/config/prices.ts';
import type { ProvidersConfig } from '../../shared/config/providersConfig.ts';
import { reservationPrices } from '../../shared/config/routePrices.ts';

// One minor unit a token makes every figure below a count of tokens.
const perToken = (units: number) => units * 1_000_000;

describe('cached input prices in PRICES', () => {
  it('takes textCachedInputPer1MTokens and textCacheWritePer1MTokens, validated like the rest', () => {
    const prices = parsePrices('{"textCachedInputPer1MTokens": 30, "textCacheWritePer1MTokens": 375}');
    expect(prices).toEqual({
      ...defaultPrices,
      textCachedInputPer1MTokens: 30,
      textCacheWritePer1MTokens: 375,
    });
    expect(() => parsePrices('{"textCachedInputPer1MTokens": -1}')).toThrow(
      /PRICES\.textCachedInputPer1MTokens/,
    );
    expect(() => parsePrices('{"textCacheWritePer1MTokens": "3"}')).toThrow(
      /PRICES\.textCacheWritePer1MTokens/,
    );
  });

  it('prices cached reads and cache writes at the input price when they are not set', () => {
    const usage = { inputTokens: 100, outputTokens: 10, cachedInputTokens: 60, cacheWriteInputTokens: 30 };
    const p = { ...defaultPrices, textInputPer1MTokens: perToken(2), textOutputPer1MTokens: perToken(5) };
    expect(textCost(p, usage)).toBe(100 * 2 + 10 * 5);
  });

  it('prices each part of the prompt at its own price', () => {
    const p = {
      ...defaultPrices,
      textInputPer1MTokens: perToken(10),
      textCachedInputPer1MTokens: perToken(1),
      textCacheWritePer1MTokens: perToken(13),
      textOutputPer1MTokens: perToken(40),
    };
    // 10 uncached, 60 read from the cache, 30 written to it, 10 output.
    const usage = { inputTokens: 100, outputTokens: 10, cachedInputTokens: 60, cacheWriteInputTokens: 30 };
    expect(textCost(p, usage)).toBe(10 * 10 + 60 * 1 + 30 * 13 + 10 * 40);
    expect(textCost(p, { inputTokens: 100, outputTokens: 10 })).toBe(100 * 10 + 10 * 40);
  });

  it('holds every input byte at the dearest input-side price, so a cache write never exceeds the hold', () => {
    const p = { ...defaultPrices, textInputPer1MTokens: perToken(4), textOutputPer1MTokens: perToken(1) };
    expect(
      maxTextCost({ ...p, textCacheWritePer1MTokens: perToken(5) }, { texts: ['abc'], maxOutputTokens: 2 }),
    ).toBe(3 * 5 + 2);
    expect(
      maxTextCost({ ...p, textCachedInputPer1MTokens: perToken(1) }, { texts: ['abc'], maxOutputTokens: 2 }),
    ).toBe(3 * 4 + 2);
  });

  it('shows the caller only the spec’s usage fields', () => {
    expect(publicUsage({ inputTokens: 5, outputTokens: 2, cachedInputTokens: 3 })).toEqual({
      inputTokens: 5,
      outputTokens: 2,
    });
  });
});

describe('the hold over a route with cache prices', () => {
  const route = (...prices: Record<string, number>[]) =>
    ({
      routes: {
        text: prices.map((p, i) => ({ provider: `p${i}`, model: 'm', prices: { ...defaultPrices, ...p } })),
      },
      aliases: { text: {} },
    }) as unknown as ProvidersConfig;

  it('takes each cache price at its highest, an entry without one counting at its input price', () => {
    const held = reservationPrices(
      route({ textInputPer1MTokens: 500 }, { textInputPer1MTokens: 100, textCacheWritePer1MTokens: 125 }),
      'text',
      defaultPrices,
    );
    expect(held.textInputPer1MTokens).toBe(500);
    expect(held.textCacheWritePer1MTokens).toBe(500);
    expect(held.textCachedInputPer1MTokens).toBeUndefined();
  });

  it('adds no cache price where no entry sets one', () => {
    expect(reservationPrices(route({ imagePerImage: 7 }, {}), 'text', defaultPrices)).toEqual({
      ...defaultPrices,
      imagePerImage: 7,
    });
  });
});
