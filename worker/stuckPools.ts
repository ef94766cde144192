import type { WorkerEvents } from 'graphile-worker';

import type { Logger } from '../shared/observability/logger.ts';

// Long enough for the jobs still running in a pool graphile-worker is stopping to finish on their
// own when the database is back; a pool still stopping after it never will.
export const stuckShutdownMs = 15_000;

/**
 * Ends the graphile-worker pools that began shutting down on their own and do not finish. When the
 * write of a job's end fails, graphile-worker starts a graceful shutdown of the whole pool, whose
 * batcher then holds every later completion back until a write succeeds, which none is ever tried
 * again to do: the pool's other workers wait on their own completions forever, the shutdown never
 * ends, and the pool neither fetches nor is released (seen after the second PostgreSQL restart in a
 * row). A forceful shutdown hands its jobs back and ends it, and SupervisedRunner starts the lane's
 * runner again. Shutdowns the process asked for (`stopping()`) are left to take their time.
 */
export function watchStuckPools(
  events: WorkerEvents,
  logger: Logger,
  stopping: () => boolean,
): { stop(): void } {
  const timers = new Map<string, NodeJS.Timeout>();
  events.on('pool:gracefulShutdown', ({ workerPool }) => {
    if (stopping() || timers.has(workerPool.id)) return;
    const timer = setTimeout(() => {
      timers.delete(workerPool.id);
      if (stopping()) return;
      logger.error(
        { pool: workerPool.id, afterMs: stuckShutdownMs },
        "a worker pool's shutdown did not finish; ending it forcefully (its jobs are handed back)",
      );
      void Promise.resolve(workerPool.forcefulShutdown('graceful shutdown did not finish')).catch(
        (error: unknown) => logger.warn({ err: error, pool: workerPool.id }, 'forceful pool shutdown failed'),
      );
    }, stuckShutdownMs);
    timer.unref();
    timers.set(workerPool.id, timer);
  });
  events.on('pool:release', ({ workerPool }) => {
    clearTimeout(timers.get(workerPool.id));
    timers.delete(workerPool.id);
  });
  return {
    stop: () => {
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}
