import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

/**
 * Stores a sealed secret for one session and member until `expiresAt`; the session's reveals that
 * expired go at the same time (the table holds minutes of rows, not history), and the hourly
 * maintenance removes the rest (deleteExpiredSecretReveals).
 */
export async function insertSecretReveal(
  db: Db,
  r: { id: string; sessionId: string; memberId: string; sealed: Buffer; expiresAt: string },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    with expired as (
      delete from secret_reveals where session_id = ${r.sessionId} and expires_at < now()
    )
    insert into secret_reveals (id, session_id, member_id, sealed, expires_at)
    values (${r.id}, ${r.sessionId}, ${r.memberId}, ${sql.binary(r.sealed)}, ${r.expiresAt})
  `);
}

/** Every reveal past its expiry, shown or not: a browser that never came back leaves its row behind. */
export async function deleteExpiredSecretReveals(db: Db): Promise<number> {
  const result = await db.query(sql.typeAlias('void')`
    delete from secret_reveals where expires_at < now()
  `);
  return result.rowCount;
}

/**
 * Takes a reveal's sealed secret once: the row is spent in the same statement, so two loads of the
 * page never both get it. Null when there is no such unspent, unexpired reveal for this session.
 */
export async function takeSecretReveal(
  db: Db,
  r: { id: string; sessionId: string; memberId: string },
): Promise<Buffer | null> {
  return db.maybeOneFirst(sql.type(z.object({ sealed: z.instanceof(Buffer) }))`
    with taken as (
      select id, sealed from secret_reveals
      where id = ${r.id} and session_id = ${r.sessionId} and member_id = ${r.memberId}
        and sealed is not null and expires_at > now()
      for update
    )
    update secret_reveals s set sealed = null, shown_at = now()
    from taken where s.id = taken.id
    returning taken.sealed
  `);
}
