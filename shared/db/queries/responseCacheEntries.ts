import { z } from 'zod';

import { type Db, noRows, sql } from '../sql.ts';

const cachedAnswer = z.object({ answer: z.unknown(), ttl_seconds: z.number() });

/** A workspace's live entry under `key` (expired ones read as absent), with the seconds it has left. */
export function findResponseCacheEntry(db: Db, workspaceId: string, key: string) {
  return db.maybeOne(sql.prepared('response_cache_entries_find', cachedAnswer)`
    select answer, greatest(0, ceil(extract(epoch from expires_at - now())))::int as ttl_seconds
    from response_cache_entries
    where workspace_id = ${workspaceId} and cache_key = ${key} and expires_at > now()
  `);
}

export type NewResponseCacheEntry = {
  workspaceId: string;
  key: string;
  operation: string;
  /** The answer as JSON text; its length is what the entry costs the workspace's budget. */
  answerJson: string;
  ttlSeconds: number;
};

/**
 * Stores (or renews) an entry unless the workspace's live entries would then hold more than
 * `maxWorkspaceBytes`. The budget is read in the same statement, so only calls storing at the same
 * moment can pass it together (by at most their own entries). Returns whether it was stored.
 */
export async function upsertResponseCacheEntry(
  db: Db,
  e: NewResponseCacheEntry,
  maxWorkspaceBytes: number,
): Promise<boolean> {
  const size = Buffer.byteLength(e.answerJson);
  const stored = await db.maybeOne(sql.prepared(
    'response_cache_entries_upsert',
    z.object({ stored: z.boolean() }),
  )`
    insert into response_cache_entries (workspace_id, cache_key, operation, answer, size_bytes, expires_at)
    select ${e.workspaceId}, ${e.key}, ${e.operation}, ${e.answerJson}::jsonb, ${size},
           now() + make_interval(secs => ${e.ttlSeconds})
    where (select coalesce(sum(size_bytes), 0) from response_cache_entries
           where workspace_id = ${e.workspaceId} and expires_at > now() and cache_key <> ${e.key})
          + ${size} <= ${maxWorkspaceBytes}
    on conflict (workspace_id, cache_key) do update
      set answer = excluded.answer, size_bytes = excluded.size_bytes, operation = excluded.operation,
          created_at = now(), expires_at = excluded.expires_at
    returning true as stored
  `);
  return stored !== null;
}

/** The hourly purge: entries past their TTL (they already read as absent). */
export async function deleteExpiredResponseCacheEntries(db: Db): Promise<void> {
  await db.query(sql.prepared('response_cache_entries_purge', noRows)`
    delete from response_cache_entries where expires_at <= now()
  `);
}
