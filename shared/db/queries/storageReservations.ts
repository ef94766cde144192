import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const roomRow = z.object({ quota: z.number(), used: z.number(), reserved: z.number() });

/**
 * Locks the workspace row (every quota decision of the workspace queues behind it) and reads what
 * its quota leaves: stored bytes and the reservations still counting, `except` one being turned into
 * a file. Run in a transaction; the statements after it see every reservation committed before the
 * lock was granted.
 */
export async function lockStorageRoom(db: Db, workspaceId: string, except: string | null = null) {
  await db.query(sql.typeAlias('void')`
    select from workspaces where id = ${workspaceId} for no key update
  `);
  return db.one(sql.type(roomRow)`
    select w.storage_quota_bytes as quota, w.storage_used_bytes as used,
           coalesce((select sum(r.bytes) from storage_reservations r
                     where r.workspace_id = w.id and r.expires_at > now()
                       and r.id is distinct from ${except}), 0)::bigint as reserved
    from workspaces w where w.id = ${workspaceId}
  `);
}

export function insertStorageReservation(
  db: Db,
  r: { id: string; workspaceId: string; bytes: number; ttlSeconds: number },
) {
  return db.query(sql.typeAlias('void')`
    insert into storage_reservations (id, workspace_id, bytes, expires_at)
    values (${r.id}, ${r.workspaceId}, ${r.bytes}, now() + make_interval(secs => ${r.ttlSeconds}))
  `);
}

export function deleteStorageReservation(db: Db, id: string) {
  return db.query(sql.typeAlias('void')`delete from storage_reservations where id = ${id}`);
}

/**
 * Moves an unexpired reservation's expiry to `ttlSeconds` from now (an upload still in flight keeps
 * its lease; a session recorded keeps its hold for its hour). An expired one is left to the sweeper:
 * it no longer counts, and counting it again would skip the quota check. True when one was moved.
 */
export async function extendStorageReservation(db: Db, id: string, ttlSeconds: number): Promise<boolean> {
  const result = await db.query(sql.typeAlias('void')`
    update storage_reservations set expires_at = now() + make_interval(secs => ${ttlSeconds})
    where id = ${id} and expires_at > now()
  `);
  return result.rowCount > 0;
}

const reservationIdRow = z.object({ id: z.string() });

/** Reservations past their expiry (they no longer count), removed by the upload sweeper: their ids. */
export function deleteExpiredStorageReservations(db: Db, limit: number) {
  return db.anyFirst(sql.type(reservationIdRow)`
    delete from storage_reservations where id in (
      select id from storage_reservations where expires_at <= now() limit ${limit}
    )
    returning id
  `);
}
