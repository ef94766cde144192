import type { Logger } from '../shared/observability/logger.ts';

// graphile-worker 0.18's LocalQueue, released while PostgreSQL is away, rejects with this and
// nothing awaits the rejection (localQueue.js returnJobs, mode RELEASED).
const lostReturn = /^Error occurred whilst returning jobs from local queue to database queue/;

/**
 * Keeps a worker process alive when graphile-worker cannot hand its local queue's jobs back to the
 * database as a pool stops (the database went away), a rejection graphile-worker leaves unhandled,
 * which would otherwise end the process with every other lane in it. Those jobs stay locked in the
 * stopped pool's name, and the reaper releases them once the database answers (worker/liveness.ts).
 * Any other unhandled rejection still ends the process, as Node's default does. Returns the
 * function that removes the handler.
 */
export function survivalOfLostLocalQueue(logger: Logger): () => void {
  const onRejection = (reason: unknown) => {
    if (reason instanceof Error && lostReturn.test(reason.message)) {
      logger.warn(
        { err: reason },
        "graphile-worker could not hand its local queue's jobs back; the reaper releases them",
      );
      return;
    }
    throw reason;
  };
  process.on('unhandledRejection', onRejection);
  return () => process.off('unhandledRejection', onRejection);
}
