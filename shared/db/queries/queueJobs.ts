import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const lockRow = z.object({ id: z.string(), locked_by: z.string(), locked_seconds: z.number() });

export type QueueLock = z.infer<typeof lockRow>;

/** Queue jobs locked by any of `holders` (graphile-worker pool ids), with how long each has been locked. */
export function findQueueLocks(db: Db, holders: string[]) {
  return db.any(sql.type(lockRow)`
    select id::text, locked_by, extract(epoch from now() - locked_at)::float8 as locked_seconds
    from graphile_worker.jobs
    where locked_by = any(${sql.array(holders, 'text')})
  `);
}

const releasedRow = z.object({ id: z.string() });

/**
 * Unlocks these queue jobs (and their named queues), as graphile-worker's `force_unlock_workers` does
 * for a whole worker, for a holder that is alive but no longer holds them: each is attempted again
 * at once (the attempt it was locked for has counted). A job is unlocked only while it is still
 * locked by the same holder for at least `minLockedSeconds`, so a job that was ended and locked
 * again meanwhile is left alone. Writes graphile-worker's private tables, as its own SQL functions
 * do: its public `jobs` view cannot be updated. Returns the ids unlocked.
 */
export function releaseQueueLocks(
  db: Db,
  locks: { id: string; lockedBy: string }[],
  minLockedSeconds: number,
) {
  const ids = locks.map((lock) => lock.id);
  const holders = locks.map((lock) => lock.lockedBy);
  return db.anyFirst(sql.type(releasedRow)`
    with released as (
      update graphile_worker._private_jobs j set locked_by = null, locked_at = null
      from unnest(${sql.array(ids, 'text')}::bigint[], ${sql.array(holders, 'text')}) as l(id, locked_by)
      where j.id = l.id and j.locked_by = l.locked_by
        and j.locked_at <= now() - make_interval(secs => ${minLockedSeconds})
      returning j.id, j.job_queue_id, l.locked_by
    ), queues as (
      update graphile_worker._private_job_queues q set locked_by = null, locked_at = null
      from released r
      where q.id = r.job_queue_id and q.locked_by = r.locked_by
    )
    select id::text from released
  `);
}

/**
 * Whether the job with this key is being run right now (locked by a worker): a job that ended is
 * deleted, one waiting is not locked.
 */
export function isKeyedJobRunning(db: Db, jobKey: string) {
  return db.oneFirst(sql.type(z.object({ running: z.boolean() }))`
    select exists (select from graphile_worker.jobs where key = ${jobKey} and locked_at is not null) as running
  `);
}
