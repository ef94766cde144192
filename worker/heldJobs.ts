import type { Worker, WorkerEvents } from 'graphile-worker';

/**
 * A job whose end this process handed to graphile-worker counts as held this long: its completion or
 * failure write is on its way (batched, on the next tick). A write that fails stops the pool (see
 * PoolState.released), so a lock still in place after this is one nothing of ours will ever write.
 */
export const endWriteGraceMs = 30_000;

type PoolState = {
  /** Its workers still running (their active jobs are held). */
  workers: Set<Worker>;
  /** Every worker it ever had: their heartbeat rows go when the pool is forgotten. */
  workerIds: Set<string>;
  /** The local queue's jobs not yet given to a worker (graphile-worker's LocalQueue.jobQueue). */
  queued: () => readonly { id: string }[];
  /** Whether the local queue is fetching: the jobs it has just locked are not in `queued` yet. */
  fetching: () => boolean;
  /** Job id → when its end was handed to graphile-worker. */
  ended: Map<string, number>;
  /**
   * The pool has shut down (a runner stopping, or graphile-worker stopping it after a completion or
   * failure write failed): it holds nothing any more, whatever it still has locked.
   */
  released: boolean;
  /**
   * The pool is shutting down (graphile-worker starts that when a completion or failure write fails,
   * and waits for its running jobs, tens of seconds while the database is out): an end it was
   * handed is no longer being written.
   */
  stopping: boolean;
};

/**
 * Which queue jobs each graphile-worker pool of this process holds, read from the runners' events:
 * the jobs its workers run, the jobs in its local queue, the jobs whose end it is writing. graphile-
 * worker locks every job in its pool's id, and a write of a job's end that fails leaves the lock in
 * place (it logs "Failed to complete jobs" / "Failed to fail jobs" and stops the pool): this is how
 * the process tells such a lock from one it holds (worker/liveness.ts releases it).
 */
export class HeldJobs {
  readonly #pools = new Map<string, PoolState>();
  readonly #now: () => number;

  constructor(events: WorkerEvents, now: () => number = Date.now) {
    this.#now = now;
    events.on('pool:create', ({ workerPool }) => {
      this.#pools.set(workerPool.id, {
        workers: new Set(),
        workerIds: new Set(),
        queued: () => [],
        fetching: () => false,
        ended: new Map(),
        released: false,
        stopping: false,
      });
    });
    events.on('localQueue:init', ({ localQueue }) => {
      const pool = this.#pools.get(localQueue.workerPool.id);
      if (!pool) return;
      pool.queued = () => localQueue.jobQueue;
      pool.fetching = () => localQueue.fetchInProgress;
    });
    events.on('worker:create', ({ worker }) => {
      const pool = this.#pools.get(worker.workerPool.id);
      pool?.workers.add(worker);
      pool?.workerIds.add(worker.workerId);
    });
    events.on('worker:stop', ({ worker }) => this.#pools.get(worker.workerPool.id)?.workers.delete(worker));
    events.on('job:complete', ({ worker, job }) => {
      const pool = this.#pools.get(worker.workerPool.id);
      if (!pool) return;
      const now = this.#now();
      pool.ended.set(job.id, now);
      for (const [id, at] of pool.ended) if (now - at > endWriteGraceMs) pool.ended.delete(id);
    });
    events.on('pool:gracefulShutdown', ({ workerPool }) => {
      const pool = this.#pools.get(workerPool.id);
      if (pool) pool.stopping = true;
    });
    events.on('pool:release', ({ workerPool }) => {
      const pool = this.#pools.get(workerPool.id);
      if (pool) pool.released = true;
    });
  }

  /** A pool given up on: from now on it holds nothing, as a released one (its locks are released). */
  abandon(poolId: string): void {
    const pool = this.#pools.get(poolId);
    if (pool) pool.released = true;
  }

  /** Ids to heartbeat: every live pool and its workers. A released pool's locks are not ours to keep. */
  liveIds(): string[] {
    const ids: string[] = [];
    for (const [id, pool] of this.#pools) {
      if (pool.released) continue;
      ids.push(id, ...pool.workerIds);
    }
    return ids;
  }

  /** The ids of every pool not yet forgotten and of their workers. */
  allIds(): string[] {
    return [...this.#pools].flatMap(([id, pool]) => [id, ...pool.workerIds]);
  }

  /** Every pool this process has run and not yet forgotten, live or released. */
  poolIds(): string[] {
    return [...this.#pools.keys()];
  }

  /** Released pools (their leftover locks are released, then they are forgotten). */
  releasedPoolIds(): string[] {
    return [...this.#pools].filter(([, pool]) => pool.released).map(([id]) => id);
  }

  /** Drops a released pool once nothing is locked in its name; returns its ids (pool and workers). */
  forget(poolId: string): string[] {
    const pool = this.#pools.get(poolId);
    this.#pools.delete(poolId);
    return pool ? [poolId, ...pool.workerIds] : [];
  }

  /** Does pool `poolId` still hold queue job `jobId`: running it, queueing it, or writing its end? */
  holds(poolId: string, jobId: string): boolean {
    const pool = this.#pools.get(poolId);
    if (!pool || pool.released) return false;
    if (pool.fetching()) return true;
    for (const worker of pool.workers) if (worker.getActiveJob()?.id === jobId) return true;
    if (pool.queued().some((job) => job.id === jobId)) return true;
    const ended = pool.ended.get(jobId);
    return !pool.stopping && ended !== undefined && this.#now() - ended <= endWriteGraceMs;
  }
}
