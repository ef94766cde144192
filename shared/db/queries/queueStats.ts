import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const taskQueueRow = z.object({
  task: z.string(),
  queued: z.number(),
  oldest_due_seconds: z.number(),
  running: z.number(),
});
export type TaskQueueRow = z.infer<typeof taskQueueRow>;

/**
 * Per task: jobs due now that no worker holds (nor has given up on), the age of the oldest of them,
 * and jobs a worker holds. Reads graphile-worker's public `jobs` view, which holds only jobs not yet
 * done (a finished job's row is deleted), so the scan is as small as the backlog.
 */
export function taskQueues(db: Db) {
  return db.any(sql.type(taskQueueRow)`
    select task_identifier as task,
      count(*) filter (where due)::int as queued,
      coalesce(extract(epoch from now() - min(run_at) filter (where due)), 0)::float8 as oldest_due_seconds,
      count(*) filter (where locked_at is not null)::int as running
    from (
      select task_identifier, run_at, locked_at,
        locked_at is null and run_at <= now() and attempts < max_attempts as due
      from graphile_worker.jobs
    ) j
    group by task_identifier
  `);
}
