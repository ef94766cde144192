/**
 * Money as people type and read it: in the currency's major unit ("50.00 USD"), while every amount
 * is stored in its minor unit (5000). How many decimals a currency has is ISO 4217's, as the
 * runtime's Intl data knows it: 2 for USD and EUR, 0 for JPY, 3 for KWD.
 */

/** The number of decimals of `currency` (2 for a code the runtime does not know). */
export function currencyDecimals(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions()
      .maximumFractionDigits!;
  } catch {
    return 2;
  }
}

/** `minor` in the major unit with the currency's decimals, and its code: "50.00 USD", "500 JPY". */
export function formatMinor(minor: number, currency: string): string {
  const decimals = currencyDecimals(currency);
  return `${(minor / 10 ** decimals).toFixed(decimals)} ${currency}`;
}

// A bigint column holds more, but an amount past 15 digits is a typing slip, and stays exact in a
// JavaScript number.
const maxMinorDigits = 15;

/**
 * An amount typed in the major unit ("50", "50.5", "50.00") as minor units, exactly (no floating
 * point): `{ minor }`, or `{ problem }` saying what is wrong, for a negative, junk or more decimals
 * than the currency has.
 */
export function parseMajorAmount(text: string, currency: string): { minor: number } | { problem: string } {
  const decimals = currencyDecimals(currency);
  const typed = text.trim();
  const example = decimals === 0 ? '50' : `50 or 50.${'0'.repeat(decimals)}`;
  if (/^-\s*\d/.test(typed)) return { problem: 'The amount cannot be negative.' };
  const match = /^(?=\.?\d)(\d*)(?:\.(\d*))?$/.exec(typed);
  if (!match) return { problem: `Enter an amount in ${currency}, like ${example}.` };
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) {
    return {
      problem:
        decimals === 0
          ? `${currency} has no decimals: enter a whole amount, like ${example}.`
          : `${currency} has ${decimals} decimals at most, like ${example}.`,
    };
  }
  const digits = `${match[1]}${fraction.padEnd(decimals, '0')}`.replace(/^0+(?=\d)/, '');
  if (digits.length > maxMinorDigits) return { problem: 'The amount is too large.' };
  return { minor: Number(digits) };
}
