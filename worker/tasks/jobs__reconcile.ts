import type { Task } from 'graphile-worker';

import { releaseHold } from '../../shared/billing/metering.ts';
import { findAbandonedJobs, findStrandedHolds } from '../../shared/db/queries/jobs.ts';
import { isJobType } from '../../shared/jobs/specs.ts';
import type { WorkerContext } from '../context.ts';
import { afterFinished, failJobForGood, type JobDefinitions } from '../jobEngine.ts';

// A job younger than this is never taken: it may be between its creation and its first attempt.
const minJobAgeSeconds = 60;
// A hold is taken in the transaction that creates or runs its job; this leaves any such transaction time to end.
const minHoldAgeSeconds = 300;
const batchSize = 100;

/** What one pass ended; tests and the log read it. */
export type Reconciliation = { failedJobs: string[]; releasedHolds: string[] };

const abandonedError = {
  code: 'internal_error',
  message: 'The job could not be completed; retry with backoff.',
};

/**
 * Brings what nothing else will finish to an end, exactly once: a job the queue will never run
 * again (its last attempt died with its worker, was cut by a shutdown, or failed in the database
 * before the job could record its failure) is failed like any failed job — hold released, the
 * kind's failure writes (a reply's failure message), job.failed — and a credit hold left open by a
 * finished job is released. Each end is a transaction under a row lock that first checks the job or
 * hold is still open, so concurrent reconcilers and a late worker never end anything twice.
 */
export async function reconcileJobs(
  ctx: Pick<WorkerContext, 'pool' | 'logger'>,
  definitions: JobDefinitions,
): Promise<Reconciliation> {
  const failedJobs: string[] = [];
  for (const job of await findAbandonedJobs(ctx.pool, minJobAgeSeconds, batchSize)) {
    const definition = isJobType(job.type) ? definitions[job.type] : undefined;
    if (await failJobForGood(ctx, definition, job.id, abandonedError)) {
      failedJobs.push(job.id);
      await afterFinished(ctx, definition, job.id);
    }
  }
  const releasedHolds: string[] = [];
  for (const holdId of await findStrandedHolds(ctx.pool, minHoldAgeSeconds, batchSize)) {
    if (await ctx.pool.transaction((tx) => releaseHold(tx, holdId))) releasedHolds.push(holdId);
  }
  if (failedJobs.length > 0 || releasedHolds.length > 0) {
    ctx.logger.warn({ failedJobs, releasedHolds }, 'reconciler ended abandoned jobs and stranded holds');
  }
  return { failedJobs, releasedHolds };
}

/** Cron `jobs__reconcile` (every minute, once across the fleet: cron jobs are keyed by their time). */
export function jobsReconcile(ctx: WorkerContext, definitions: JobDefinitions): Task {
  return async () => {
    await reconcileJobs(ctx, definitions);
  };
}
