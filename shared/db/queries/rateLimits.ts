import { z } from 'zod';

import { type Db, noRows, sql } from '../sql.ts';

const grantedRow = z.object({ granted: z.number(), used: z.number() });

/**
 * Takes up to `want` requests from the workspace's window, never past `limit`, and says how many it got
 * and how many the window has given out now (every process's leases).
 * The FOR UPDATE sub-select serializes concurrent takers from every api process on the window row.
 */
export function leaseRateLimit(
  db: Db,
  workspaceId: string,
  windowStart: string,
  want: number,
  limit: number,
) {
  return db.maybeOne(sql.prepared('rate_limit_lease', grantedRow)`
    update rate_limit_windows r set used = r.used + g.granted
    from (
      select workspace_id, window_start, greatest(0, least(${want}, ${limit} - used)) as granted
      from rate_limit_windows
      where workspace_id = ${workspaceId} and window_start = ${windowStart}::timestamptz
      for update
    ) g
    where r.workspace_id = g.workspace_id and r.window_start = g.window_start
    returning g.granted, r.used
  `);
}

export async function openRateLimitWindow(db: Db, workspaceId: string, windowStart: string): Promise<void> {
  await db.query(sql.prepared('rate_limit_open', noRows)`
    insert into rate_limit_windows (workspace_id, window_start) values (${workspaceId}, ${windowStart}::timestamptz)
    on conflict do nothing
  `);
}

export async function deleteOldRateLimitWindows(db: Db): Promise<void> {
  await db.query(
    sql.typeAlias('void')`delete from rate_limit_windows where window_start < now() - interval '10 minutes'`,
  );
}
