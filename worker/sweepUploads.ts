import { findActiveInputKeys } from '../shared/db/queries/jobs.ts';
import type { Db } from '../shared/db/sql.ts';
import type { WorkerContext } from './context.ts';

const batch = 500;

/**
 * Deletes objects under `prefix` older than `before` that nothing refers to (`referenced` keeps the
 * rest): job uploads (`job-inputs/…`, the default) that no queued or running job needs, left behind
 * when an api process died between storing an upload and creating its job or when a worker's own
 * cleanup failed; or file bytes (`files/…`) stored by an upload whose process died before its row.
 * Returns how many objects it removed.
 */
export async function sweepOrphanUploads(
  ctx: Pick<WorkerContext, 'pool' | 'objectStore'>,
  before: Date,
  prefix = 'job-inputs/',
  referenced: (db: Db, keys: string[]) => Promise<readonly string[]> = findActiveInputKeys,
): Promise<number> {
  let removed = 0;
  let keys: string[] = [];
  const flush = async () => {
    const active = new Set(await referenced(ctx.pool, keys));
    for (const key of keys) {
      if (active.has(key)) continue;
      await ctx.objectStore.remove(key);
      removed++;
    }
    keys = [];
  };
  for await (const key of ctx.objectStore.listOlderThan(prefix, before)) {
    keys.push(key);
    if (keys.length >= batch) await flush();
  }
  if (keys.length > 0) await flush();
  return removed;
}
