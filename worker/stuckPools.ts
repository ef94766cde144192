import { EventEmitter } from 'node:events';

import type { WorkerEvents, WorkerPool } from 'graphile-worker';

import type { Logger } from '../shared/observability/logger.ts';

// Long enough for the jobs still running in a pool graphile-worker is stopping to finish on their
// own when the database is back; a pool still stopping after it never will.
export const stuckShutdownMs = 15_000;
// graphile-worker's forceful shutdown bounds its own steps at 5 s; past this it is stuck as well.
export const stuckForcefulMs = 10_000;

/**
 * An emitter for one lane's runner that also reports every event to the process's `shared` one
 * (liveness, metrics): the lane can then tell its own pools from the other lanes'.
 */
export function laneEmitter(shared: WorkerEvents): WorkerEvents {
  const lane = new EventEmitter() as WorkerEvents;
  type Emit = (name: string, ...args: unknown[]) => boolean;
  const emitHere = lane.emit.bind(lane) as Emit;
  const emitShared = shared.emit.bind(shared) as Emit;
  const emit: Emit = (name, ...args) => {
    const heard = emitHere(name, ...args);
    return emitShared(name, ...args) || heard;
  };
  lane.emit = emit as WorkerEvents['emit'];
  return lane;
}

/**
 * Ends the graphile-worker pools of one lane that began shutting down on their own and do not
 * finish. When the write of a job's end fails, graphile-worker starts a graceful shutdown of the
 * whole pool, whose batcher then holds every later completion back until a write succeeds, which
 * none is ever tried again to do: the pool's other workers wait on their own completions forever,
 * the shutdown never ends, and the pool neither fetches nor is released (seen after the second
 * PostgreSQL restart in a row). After `stuckShutdownMs` it is shut down forcefully (its jobs handed
 * back, SupervisedRunner then starts the lane's runner again); if even that does not end it within
 * `stuckForcefulMs` (its own steps wait on the same batcher), the pool is abandoned: `abandon` is
 * told, so its locks are released and the lane's runner replaced without waiting for it. Shutdowns
 * the process asked for (`stopping()`) are left to take their time.
 */
export function watchStuckPools(
  events: WorkerEvents,
  logger: Logger,
  stopping: () => boolean,
  abandon: (pool: WorkerPool) => void,
): { stop(): void } {
  const timers = new Map<string, NodeJS.Timeout>();
  const later = (pool: WorkerPool, ms: number, step: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(pool.id);
      if (!stopping()) step();
    }, ms);
    timer.unref();
    timers.set(pool.id, timer);
  };
  const giveUp = (pool: WorkerPool) => {
    logger.error(
      { pool: pool.id, afterMs: stuckForcefulMs },
      'a worker pool did not stop even forcefully; abandoning it and starting its lane again',
    );
    abandon(pool);
  };
  const force = (pool: WorkerPool) => {
    logger.error(
      { pool: pool.id, afterMs: stuckShutdownMs },
      "a worker pool's shutdown did not finish; ending it forcefully (its jobs are handed back)",
    );
    later(pool, stuckForcefulMs, () => giveUp(pool));
    void Promise.resolve(pool.forcefulShutdown('graceful shutdown did not finish')).catch((error: unknown) =>
      logger.warn({ err: error, pool: pool.id }, 'forceful pool shutdown failed'),
    );
  };
  events.on('pool:gracefulShutdown', ({ workerPool }) => {
    if (stopping() || timers.has(workerPool.id)) return;
    later(workerPool, stuckShutdownMs, () => force(workerPool));
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
