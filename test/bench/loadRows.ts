import type { LoadResult } from './harness.ts';

/** A load run's throughput and latency as report rows, labelled with what was driven (`GET /me requests/s`). */
export const loadRows = (name: string, result: LoadResult): Record<string, string | number> => ({
  [`${name} requests/s`]: result.requestsPerSecond,
  [`${name} p50 / p99 ms`]: `${result.p50Ms} / ${result.p99Ms}`,
});
