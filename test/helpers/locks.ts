import type { DatabasePool } from 'slonik';
import { z } from 'zod';

import { sql } from '../../shared/db/sql.ts';
import { waitUntil } from '../integration/api/tasks.helpers.ts';

/**
 * Resolves once `count` sessions of this database are waiting for a heavyweight lock (a row, a
 * transaction, an advisory lock): the way a test knows concurrent work has reached the point where
 * it queues behind a transaction the test holds open, without sleeping.
 */
export function waitForLockWaiters(pool: DatabasePool, count: number, timeoutMs = 30_000): Promise<number> {
  return waitUntil(
    async () => {
      const waiting = await pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock'
    `);
      return waiting >= count ? waiting : undefined;
    },
    timeoutMs,
    20,
  );
}
