import { type Db, sql } from '../db/sql.ts';
import { activeTrace } from '../observability/traceContext.ts';
import type { TaskName } from './taskMap.ts';

/**
 * Adds a graphile-worker job inside the caller's transaction, so the job exists iff the rows commit.
 * The job key makes a repeated enqueue of the same work replace, not duplicate, the pending job;
 * jobs of one queue name run one at a time across every worker. The payload carries the caller's
 * trace context when tracing is on (see traceCarrier).
 */
export async function enqueue<T extends TaskName>(
  tx: Db,
  task: T,
  payload: GraphileWorker.Tasks[T],
  options: {
    jobKey?: string;
    maxAttempts?: number;
    priority?: number;
    runAt?: string;
    queueName?: string;
  } = {},
): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    select from graphile_worker.add_job(
      ${task}, ${sql.json({ ...payload, ...activeTrace() } as never)},
      queue_name => ${options.queueName ?? null},
      run_at => ${options.runAt ?? null}::timestamptz,
      max_attempts => ${options.maxAttempts ?? 25},
      job_key => ${options.jobKey ?? null},
      priority => ${options.priority ?? 0}
    )
  `);
}
