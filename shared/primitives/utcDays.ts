export const dayMs = 86_400_000;

/** The start of the UTC day that holds `at` (epoch milliseconds). */
export const utcDayStart = (at: number): number => Math.floor(at / dayMs) * dayMs;

/** The `count` UTC days up to and including the one that holds `now`, oldest first, as YYYY-MM-DD. */
export function lastUtcDays(count: number, now: number): string[] {
  const today = utcDayStart(now);
  return Array.from({ length: count }, (_, i) =>
    new Date(today - (count - 1 - i) * dayMs).toISOString().slice(0, 10),
  );
}
