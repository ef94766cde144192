import { parentPort, workerData } from 'node:worker_threads';

import autocannon from 'autocannon';

/**
 * One load run in its own thread (a real client does not share the server's event loop), keeping
 * every response's latency as autocannon measures it (hrtime, fractions of a millisecond): its own
 * percentiles are whole milliseconds, too coarse to compare calls that take 3 to 5 ms.
 */
export type LoadWorkerResult = {
  requestsPerSecond: number;
  total: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
};

const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

const latencies: number[] = [];
// In a worker thread autocannon hands back its raw counters (it takes the thread for one of its own).
type RawResult = {
  totalCompletedRequests: number;
  /** Seconds. */
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
};

const instance = autocannon(workerData as autocannon.Options, (error, result) => {
  if (error) throw error;
  const raw = result as unknown as RawResult;
  const sorted = Float64Array.from(latencies).sort();
  const round = (ms: number) => Math.round(ms * 100) / 100;
  parentPort!.postMessage({
    requestsPerSecond: Math.round(raw.totalCompletedRequests / raw.duration),
    total: raw.totalCompletedRequests,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    errors: raw.errors + raw.timeouts,
    non2xx: raw.non2xx,
  } satisfies LoadWorkerResult);
});
instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) => {
  latencies.push(ms);
});
