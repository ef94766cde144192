import type { WorkerEvents } from 'graphile-worker';

import { findQueueLocks, releaseQueueLocks } from '../shared/db/queries/queueJobs.ts';
import {
  beatWorkers,
  findDeadLockHolders,
  forceUnlockWorkers,
  forgetWorkers,
} from '../shared/db/queries/workerHeartbeats.ts';
import type { WorkerContext } from './context.ts';
import { HeldJobs } from './heldJobs.ts';

/**
 * Heartbeats for this process's graphile workers (and their pools), and the reaper, both every
 * WORKER_HEARTBEAT_MS (5 s by default). The reaper force-unlocks the jobs of workers silent for
 * WORKER_STALE_AFTER_MS (20 s; graphile-worker alone would leave them locked for four hours), so by
 * default a killed worker's job is back in the queue well within 60 s of the kill. It also releases
 * the locks this process's own pools left behind: graphile-worker locks a job in its pool's id, and
 * when the write of a job's end fails (PostgreSQL restarting) it logs "Failed to fail jobs" and stops
 * the pool with the job still locked, in the name of a process that is alive and beating. Such a
 * lock is released at the first pass that reaches the database (within one interval of it answering
 * again); a lock of a live pool that does not hold its job (see HeldJobs) at two passes in a row,
 * one to two intervals after it was lost (a fetch whose answer was lost with its connection leaves
 * one). Cron's one-minute granularity is too coarse for this, so the reaper runs on a timer in every
 * worker process.
 */
export function startLiveness(
  ctx: WorkerContext,
  events: WorkerEvents,
  label: string,
): { stop(): Promise<void>; abandon(poolId: string): void } {
  const { workerHeartbeatMs: everyMs, workerStaleAfterMs } = ctx.config;
  const held = new HeldJobs(events);
  const beat = () =>
    beatWorkers(ctx.pool, held.liveIds(), label).catch((error: unknown) =>
      ctx.logger.warn({ err: error }, 'heartbeat failed'),
    );
  // Beat at once: a pool and its workers must count as live from their first job on.
  events.on('pool:create', () => void beat());
  events.on('worker:create', () => void beat());
  const reapDead = async () => {
    const live = new Set(held.liveIds());
    const dead = (await findDeadLockHolders(ctx.pool, workerStaleAfterMs / 1000)).filter(
      (id) => !live.has(id),
    );
    if (dead.length > 0) {
      await forceUnlockWorkers(ctx.pool, dead);
      ctx.logger.warn({ workers: dead }, 'released the jobs of dead workers');
    }
  };
  let unheldBefore = new Set<string>();
  const releaseLeftovers = async () => {
    const pools = held.poolIds();
    if (pools.length === 0) return;
    const released = new Set(held.releasedPoolIds());
    const locks = await findQueueLocks(ctx.pool, pools);
    const unheld = locks.filter((lock) => !held.holds(lock.locked_by, lock.id));
    const ofReleased = unheld.filter((lock) => released.has(lock.locked_by));
    // A live pool's lock it does not hold at two passes in a row: a job passes from the local queue
    // to a worker within a tick, never across a pass, so this is a lock nothing of ours will end.
    const seen = new Set(unheld.map((lock) => `${lock.locked_by}/${lock.id}`));
    const ofLive = unheld.filter(
      (lock) => !released.has(lock.locked_by) && unheldBefore.has(`${lock.locked_by}/${lock.id}`),
    );
    unheldBefore = seen;
    const toRelease = (list: typeof locks) => list.map((lock) => ({ id: lock.id, lockedBy: lock.locked_by }));
    const freed = [
      ...(ofReleased.length > 0 ? await releaseQueueLocks(ctx.pool, toRelease(ofReleased), 0) : []),
      ...(ofLive.length > 0 ? await releaseQueueLocks(ctx.pool, toRelease(ofLive), everyMs / 1000) : []),
    ];
    if (freed.length > 0) {
      ctx.logger.warn(
        { queueJobs: freed, pools: [...new Set(unheld.map((lock) => lock.locked_by))] },
        'released queue jobs this worker had locked but no longer runs; they will be attempted again',
      );
    }
    // A released pool with nothing left locked in its name is done with; its heartbeat rows go too.
    const freedIds = new Set(freed);
    for (const poolId of released) {
      if (ofReleased.some((lock) => lock.locked_by === poolId && !freedIds.has(lock.id))) continue;
      await forgetWorkers(ctx.pool, held.forget(poolId));
    }
  };
  const reap = async () => {
    try {
      await reapDead();
      await releaseLeftovers();
    } catch (error) {
      ctx.logger.warn({ err: error }, 'reaper failed');
    }
  };
  void beat();
  const beatTimer = setInterval(() => void beat(), everyMs);
  const reapTimer = setInterval(() => void reap(), everyMs);
  return {
    // A pool that could not be stopped (worker/stuckPools.ts) holds nothing any more.
    abandon: (poolId) => held.abandon(poolId),
    stop: async () => {
      clearInterval(beatTimer);
      clearInterval(reapTimer);
      // Best effort: a heartbeat left behind goes stale and is ignored anyway.
      await forgetWorkers(ctx.pool, held.allIds()).catch(() => {});
    },
  };
}
