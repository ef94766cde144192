import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

export async function beatWorkers(db: Db, workerIds: string[], label: string): Promise<void> {
  if (workerIds.length === 0) return;
  await db.query(sql.typeAlias('void')`
    insert into worker_heartbeats (worker_id, process_label, last_seen_at)
    select unnest(${sql.array(workerIds, 'text')}::text[]), ${label}, now()
    on conflict (worker_id) do update set last_seen_at = now()
  `);
}

export async function forgetWorkers(db: Db, workerIds: string[]): Promise<void> {
  await db.query(sql.typeAlias('void')`
    delete from worker_heartbeats where worker_id = any(${sql.array(workerIds, 'text')})
  `);
}

const lockHolderRow = z.object({ locked_by: z.string() });
const liveCountRow = z.object({ n: z.number() });

/**
 * Workers holding job locks whose heartbeat is older than `staleSeconds` (or that never beat and
 * locked their job that long ago): they are dead, and their jobs would otherwise stay locked 4 hours.
 * Reads graphile-worker's public `jobs` view.
 */
export function findDeadLockHolders(db: Db, staleSeconds: number) {
  return db.anyFirst(sql.type(lockHolderRow)`
    select distinct j.locked_by
    from graphile_worker.jobs j
    left join worker_heartbeats h on h.worker_id = j.locked_by
    where j.locked_by is not null
      and coalesce(h.last_seen_at, j.locked_at) < now() - make_interval(secs => ${staleSeconds})
  `);
}

export async function forceUnlockWorkers(db: Db, workerIds: string[]): Promise<void> {
  await db.query(sql.typeAlias('void')`
    select from graphile_worker.force_unlock_workers(${sql.array(workerIds, 'text')})
  `);
  await forgetWorkers(db, workerIds);
}

/** Worker processes that sent a heartbeat within `staleSeconds` (worker/liveness.ts). */
export function countLiveWorkerProcesses(db: Db, staleSeconds: number): Promise<number> {
  return db.oneFirst(sql.type(liveCountRow)`
    select count(distinct process_label)::int as n
    from worker_heartbeats
    where last_seen_at >= now() - make_interval(secs => ${staleSeconds})
  `);
}
