import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const snapshotRow = z.object({ body: z.unknown(), age_ms: z.number() });
export type StatusSnapshotRow = z.infer<typeof snapshotRow>;

/** The stored status snapshot with its age by the database's clock (the one clock every process shares). */
export function findStatusSnapshot(db: Db) {
  return db.maybeOne(sql.type(snapshotRow)`
    select body, (extract(epoch from now() - computed_at) * 1000)::float8 as age_ms from status_snapshot
  `);
}

/**
 * Stores `body` as the snapshot unless another process stored one younger than `maxAgeMs` meanwhile;
 * returns whichever snapshot stands afterwards.
 */
export async function storeStatusSnapshot(db: Db, body: unknown, maxAgeMs: number): Promise<StatusSnapshotRow> {
  const stored = await db.maybeOne(sql.type(snapshotRow)`
    insert into status_snapshot (id, body, computed_at) values (true, ${sql.jsonb(body as never)}, now())
    on conflict (id) do update set body = excluded.body, computed_at = excluded.computed_at
      where status_snapshot.computed_at <= now() - make_interval(secs => ${maxAgeMs / 1000})
    returning body, 0::float8 as age_ms
  `);
  return stored ?? (await findStatusSnapshot(db))!;
}
