import { describe, expect, it } from '@jest/globals';

import {
  defaultPrices,
  embeddingCost,
  imageCost,
  maxEmbeddingCost,
  maxTextCost,
  maxTokensOf,
  ocrCost,
  parsePrices,
  textCost,
  transcriptionCost,
} from '../../shared/config/prices.ts';

describe('price table', () => {
  it('is the default table without PRICES', () => {
    expect(parsePrices(undefined)).toEqual(defaultPrices);
  });

  it('lays PRICES entries over the defaults', () => {
    const prices = parsePrices('{"imagePerImage": 8, "ocrPerPage": 0.5}');
    expect(prices).toEqual({ ...defaultPrices, imagePerImage: 8, ocrPerPage: 0.5 });
  });

  it.each([
    ['not JSON', '{imagePerImage: 8}', /not valid JSON/],
    ['an unknown price', '{"imagePerPicture": 8}', /PRICES/],
    ['a negative price', '{"imagePerImage": -1}', /PRICES\.imagePerImage/],
    ['a string price', '{"imagePerImage": "8"}', /PRICES\.imagePerImage/],
  ])('refuses %s', (_name, json, message) => {
    expect(() => parsePrices(json)).toThrow(message);
  });
});

describe('costs', () => {
  const p = defaultPrices;

  it('prices tokens per million, images per image, audio per second, OCR per page', () => {
    expect(textCost(p, { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(300 + 1200);
    expect(textCost(p, { inputTokens: 10, outputTokens: 10 })).toBeCloseTo(0.015);
    expect(imageCost(p, 2)).toBe(8);
    expect(embeddingCost(p, 500_000)).toBe(1);
    expect(transcriptionCost(p, 120)).toBeCloseTo(1.2);
    expect(ocrCost(p, 3)).toBe(3);
  });

  it('bounds tokens by UTF-8 bytes, so a hold never undershoots for any script', () => {
    expect(maxTokensOf('abcd')).toBe(4);
    expect(maxTokensOf('नेपाल')).toBe(15);
  });

  it('holds the whole output budget for text and every input byte', () => {
    const prices = { ...p, textInputPer1MTokens: 1_000_000, textOutputPer1MTokens: 2_000_000 };
    expect(maxTextCost(prices, { texts: ['ab', 'c'], maxOutputTokens: 10 })).toBe(3 + 20);
    expect(maxEmbeddingCost({ ...p, embeddingInputPer1MTokens: 1_000_000 }, ['ab', 'cde'])).toBe(5);
  });
});
