import type { LoadResult } from './harness.ts';

/** The value at percentile `p` (0–100) of `values`, nearest rank. */
export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export const median = (values: number[]) => percentile(values, 50);

/** The mean of `values` and its standard error (0 for fewer than two values). */
export function meanWithError(values: number[]): { mean: number; standardError: number } {
  const mean = values.reduce((sum, v) => sum + v, 0) / values.length;
  if (values.length < 2) return { mean, standardError: 0 };
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (values.length - 1);
  return { mean, standardError: Math.sqrt(variance / values.length) };
}

/** Milliseconds each of `n` calls of `call` took, one after the other. */
export async function timedCalls(call: () => Promise<unknown>, n: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await call();
    ms.push(performance.now() - started);
  }
  return ms;
}

/** One load run as a report row. */
export const loadRow = (r: LoadResult) =>
  `${r.requestsPerSecond} req/s, p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms, errors ${r.errors}, non-2xx ${r.non2xx}, steal ${r.stealPercent}%`;
