import { describe, expect, it } from '@jest/globals';

import { currencyDecimals, formatMinor, parseMajorAmount } from '../../shared/billing/majorUnits.ts';

describe('amounts typed in the major unit', () => {
  it("stores them in minor units, by the currency's decimals", () => {
    expect(parseMajorAmount('50', 'USD')).toEqual({ minor: 5000 });
    expect(parseMajorAmount('50.00', 'USD')).toEqual({ minor: 5000 });
    expect(parseMajorAmount(' 50.5 ', 'USD')).toEqual({ minor: 5050 });
    expect(parseMajorAmount('0.07', 'EUR')).toEqual({ minor: 7 });
    expect(parseMajorAmount('0', 'USD')).toEqual({ minor: 0 });
    expect(parseMajorAmount('.5', 'USD')).toEqual({ minor: 50 });
    expect(parseMajorAmount('500', 'JPY')).toEqual({ minor: 500 });
    expect(parseMajorAmount('1.250', 'KWD')).toEqual({ minor: 1250 });
    // Exact where binary floating point is not (0.29 * 100 = 28.999…).
    expect(parseMajorAmount('0.29', 'USD')).toEqual({ minor: 29 });
  });

  it('refuses more decimals than the currency has, negatives, junk and absurd sizes', () => {
    expect(parseMajorAmount('50.125', 'USD')).toEqual({
      problem: 'USD has 2 decimals at most, like 50 or 50.00.',
    });
    expect(parseMajorAmount('50.5', 'JPY')).toEqual({
      problem: 'JPY has no decimals: enter a whole amount, like 50.',
    });
    expect(parseMajorAmount('-5', 'USD')).toEqual({ problem: 'The amount cannot be negative.' });
    for (const junk of ['fifty', '5e3', '1,000', '$50', '.', '', '50 USD']) {
      expect(parseMajorAmount(junk, 'USD')).toEqual({ problem: 'Enter an amount in USD, like 50 or 50.00.' });
    }
    expect(parseMajorAmount('1'.repeat(14), 'USD')).toEqual({ problem: 'The amount is too large.' });
  });

  it('formats minor units with the currency and its decimals', () => {
    expect(currencyDecimals('USD')).toBe(2);
    expect(currencyDecimals('JPY')).toBe(0);
    expect(currencyDecimals('not a code')).toBe(2);
    expect(formatMinor(5000, 'USD')).toBe('50.00 USD');
    expect(formatMinor(500, 'JPY')).toBe('500 JPY');
    expect(formatMinor(1250, 'KWD')).toBe('1.250 KWD');
  });
});
