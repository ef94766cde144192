import { z } from 'zod';

import { type Db, noRows, sql } from '../sql.ts';

const usedRow = z.object({ used: z.number() });

/**
 * Adds `tokens` to a scope's window (`ws:<id>` / `key:<id>`) unless that would pass `limit`, and says
 * how many the window holds then; null when refused (nothing is added). The row lock of the upsert
 * serializes concurrent reservations from every process, so the check and the add are one step.
 */
export function reserveTokenWindow(
  db: Db,
  scope: string,
  windowStart: string,
  tokens: number,
  limit: number,
) {
  return db.maybeOneFirst(sql.prepared('token_window_reserve', usedRow)`
    insert into token_limit_windows as w (scope, window_start, used)
    select ${scope}, ${windowStart}::timestamptz, ${tokens}::bigint where ${tokens}::bigint <= ${limit}::bigint
    on conflict (scope, window_start) do update set used = w.used + excluded.used
      where w.used + excluded.used <= ${limit}::bigint
    returning w.used::float8 as used
  `);
}

/** What a scope's window holds now (0 when nothing was reserved in it). */
export async function findTokenWindowUsed(db: Db, scope: string, windowStart: string): Promise<number> {
  const used = await db.maybeOneFirst(sql.prepared('token_window_used', usedRow)`
    select used::float8 as used from token_limit_windows
    where scope = ${scope} and window_start = ${windowStart}::timestamptz
  `);
  return used ?? 0;
}

export type TokenReservation = {
  jobId: string;
  workspaceId: string;
  keyId: string | null;
  windowStart: string;
  tokens: number;
};

export async function insertTokenReservation(db: Db, r: TokenReservation): Promise<void> {
  await db.query(sql.prepared('token_reservation_insert', noRows)`
    insert into token_reservations (job_id, workspace_id, key_id, window_start, tokens)
    values (${r.jobId}, ${r.workspaceId}, ${r.keyId}, ${r.windowStart}::timestamptz, ${r.tokens})
  `);
}

/**
 * Takes a job's reservation away and moves each window it was taken from by `used - reserved`
 * (a settled call gives back what it did not use), in one statement: exactly once, since a second
 * settlement finds no reservation. The windows are locked workspace first, then key, the order a
 * reservation takes them in, so the two never deadlock.
 */
export async function settleTokenReservation(db: Db, jobId: string, used: number): Promise<void> {
  await db.query(sql.prepared('token_reservation_settle', noRows)`
    with r as (
      delete from token_reservations where job_id = ${jobId}
      returning window_start, tokens, array['ws:' || workspace_id, 'key:' || key_id] as scopes
    ), locked as (
      select w.scope, w.window_start, r.tokens from token_limit_windows w join r
        on w.window_start = r.window_start and w.scope = any(r.scopes)
      order by w.scope desc
      for update of w
    )
    update token_limit_windows w set used = greatest(0, w.used + ${used}::bigint - locked.tokens)
    from locked where w.scope = locked.scope and w.window_start = locked.window_start
  `);
}

export async function deleteOldTokenWindows(db: Db): Promise<void> {
  await db.query(
    sql.typeAlias('void')`delete from token_limit_windows where window_start < now() - interval '10 minutes'`,
  );
}

/** Reservations whose job never settled them (a process died between): their window is long closed. */
export async function deleteOldTokenReservations(db: Db): Promise<void> {
  await db.query(
    sql.typeAlias('void')`delete from token_reservations where created_at < now() - interval '1 day'`,
  );
}
