/**
 * How each graphile-worker runner fetches and completes jobs.
 *
 * Every runner writes completions and failures through graphile-worker's batcher (a delay of 0:
 * the next tick). Its shutdown waits for a batcher's pending writes; an unbatched completion is
 * fire-and-forget, so a job that finished just before SIGTERM could lose its completion with the
 * pool and stay locked until the reaper hands it to another worker, which would run it again
 * (a webhook delivered twice).
 */
const trackedOutcomes = { completeJobBatchDelay: 0, failJobBatchDelay: 0 };

/**
 * The main runner fetches and locks jobs in batches: about a third less database work per job
 * under load. Jobs are locked by the pool's id, which heartbeats like each worker's (see liveness.ts).
 */
export function mainRunnerPreset(concurrency: number) {
  return { localQueue: { size: concurrency + 1 }, ...trackedOutcomes };
}

/**
 * The webhook, OCR and video runners: graphile-worker announces every new job to every runner, so without
 * this each of their idle runners would look for a job on every insert and almost always find none
 * (on the POST /text bench, one empty fetch per call and runner: a fifth of PostgreSQL's work per
 * call). After an empty fetch a side runner ignores announcements for about half a second, so a
 * delivery or OCR job that arrives meanwhile can wait that long; with jobs in hand it fetches as
 * usual. One job per fetch: a batch would keep only one job of each named queue (each webhook
 * endpoint has its own) and leave other endpoints' jobs behind it until the next poll.
 */
export const sideRunnerPreset = {
  localQueue: { size: 1, refetchDelay: { durationMs: 500, threshold: 0, maxAbortThreshold: Infinity } },
  ...trackedOutcomes,
};
