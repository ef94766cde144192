import type { WorkerEvents } from 'graphile-worker';

import {
  beatWorkers,
  findDeadLockHolders,
  forceUnlockWorkers,
  forgetWorkers,
} from '../shared/db/queries/workerHeartbeats.ts';
import { heartbeatEveryMs, staleAfterSeconds } from '../shared/queue/liveness.ts';
import type { WorkerContext } from './context.ts';

// A reaper runs every 5 s in every worker process, so a killed worker's job is back in the queue
// well within 60 s of the kill.
const reapEveryMs = 5000;

/**
 * Heartbeats for this process's graphile workers (and their pool), and the reaper that force-unlocks the jobs of dead
 * ones (graphile-worker alone would leave them locked for four hours). Cron's one-minute granularity
 * is too coarse for the 60 s promise, so the reaper runs on a timer in every worker process.
 */
export function startLiveness(
  ctx: WorkerContext,
  events: WorkerEvents,
  label: string,
): { stop(): Promise<void> } {
  const workerIds = new Set<string>();
  const beat = () =>
    beatWorkers(ctx.pool, [...workerIds], label).catch((error: unknown) =>
      ctx.logger.warn({ err: error }, 'heartbeat failed'),
    );
  // The local queue locks the jobs it holds in the pool's name: the pool beats like a worker.
  events.on('pool:create', ({ workerPool }) => {
    workerIds.add(workerPool.id);
    void beat();
  });
  events.on('worker:create', ({ worker }) => {
    workerIds.add(worker.workerId);
    // Beat at once: a worker must count as live from its first job on.
    void beat();
  });
  const reap = async () => {
    try {
      const dead = (await findDeadLockHolders(ctx.pool, staleAfterSeconds)).filter(
        (id) => !workerIds.has(id),
      );
      if (dead.length > 0) {
        await forceUnlockWorkers(ctx.pool, dead);
        ctx.logger.warn({ workers: dead }, 'released the jobs of dead workers');
      }
    } catch (error) {
      ctx.logger.warn({ err: error }, 'reaper failed');
    }
  };
  void beat();
  const beatTimer = setInterval(() => void beat(), heartbeatEveryMs);
  const reapTimer = setInterval(() => void reap(), reapEveryMs);
  return {
    stop: async () => {
      clearInterval(beatTimer);
      clearInterval(reapTimer);
      // Best effort: a heartbeat left behind goes stale and is ignored after 20 s anyway.
      await forgetWorkers(ctx.pool, [...workerIds]).catch(() => {});
    },
  };
}
