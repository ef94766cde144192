import { z } from 'zod';

import { type Db, idRow, noRows, sql } from '../sql.ts';

/**
 * Takes a lease for one more open stream of the workspace unless it has `limit` leases already:
 * the workspace's count row is created, or incremented only while below the limit, and the lease
 * row inserted, in one statement. ON CONFLICT DO UPDATE locks the count row and checks its WHERE
 * against the row's latest version, so takers from every api process queue on that row and can
 * never pass the limit together. Returns false when the workspace is at its limit.
 */
export async function takeStreamLease(
  db: Db,
  lease: { id: string; workspaceId: string; limit: number; ttlMs: number },
): Promise<boolean> {
  const taken = await db.maybeOne(sql.prepared('stream_lease_take', idRow)`
    with slot as (
      insert into stream_lease_counts as c (workspace_id, leases) values (${lease.workspaceId}, 1)
      on conflict (workspace_id) do update set leases = c.leases + 1 where c.leases < ${lease.limit}::integer
      returning workspace_id
    )
    insert into stream_leases (id, workspace_id, expires_at)
    select ${lease.id}, workspace_id, now() + ${lease.ttlMs}::integer * interval '1 millisecond' from slot
    returning id
  `);
  return taken !== null;
}

/**
 * Gives a lease back: its row goes and its workspace's count goes down with it, once. A lease already
 * purged as expired, or released before, changes nothing.
 */
export async function releaseStreamLease(db: Db, id: string): Promise<void> {
  await db.query(sql.prepared('stream_lease_release', noRows)`
    with gone as (delete from stream_leases where id = ${id} returning workspace_id)
    update stream_lease_counts c set leases = c.leases - 1 from gone where c.workspace_id = gone.workspace_id
  `);
}

const purgedRow = z.object({ purged: z.number() });

/**
 * Deletes the workspace's expired leases (left by a process that died with streams open) and takes
 * them off its count; returns how many. Rows another transaction is deleting are skipped: that one
 * takes them off. Lease rows are locked before the count row, as releaseStreamLease locks them.
 */
export function purgeExpiredStreamLeases(db: Db, workspaceId: string): Promise<number> {
  return db.oneFirst(sql.type(purgedRow)`
    with gone as (
      delete from stream_leases where id in (
        select id from stream_leases
        where workspace_id = ${workspaceId} and expires_at <= now()
        for update skip locked
      )
      returning workspace_id
    ), counted as (
      update stream_lease_counts c set leases = c.leases - g.n
      from (select workspace_id, count(*)::integer as n from gone group by workspace_id) g
      where c.workspace_id = g.workspace_id
      returning g.n
    )
    select coalesce(sum(n), 0)::integer as purged from counted
  `);
}

const secondsRow = z.object({ seconds: z.number().nullable() });

/** Whole seconds until the workspace's first live lease expires (null when it has none). */
export function secondsUntilStreamLeaseExpires(db: Db, workspaceId: string): Promise<number | null> {
  return db.oneFirst(sql.type(secondsRow)`
    select ceil(extract(epoch from min(expires_at) - now()))::integer as seconds
    from stream_leases where workspace_id = ${workspaceId} and expires_at > now()
  `);
}
