import type { Task } from 'graphile-worker';

import { deleteExpiredIdempotencyKeys } from '../../shared/db/queries/idempotencyKeys.ts';
import { deleteEmptyJobQueues, purgeUncollectedResults } from '../../shared/db/queries/jobs.ts';
import { deleteOldRateLimitWindows } from '../../shared/db/queries/rateLimits.ts';
import { deleteRequestLogsBefore } from '../../shared/db/queries/requestLogs.ts';
import { deleteStatusSamplesBefore } from '../../shared/db/queries/statusSamples.ts';
import { deleteEventsBefore } from '../../shared/events.ts';
import { jobSpecs } from '../../shared/jobs.ts';
import type { WorkerContext } from '../context.ts';
import { sweepOrphanUploads } from '../sweepUploads.ts';

/**
 * Retention: the request log is kept 30 days (spec), so are events with their webhook delivery log;
 * status samples cover the 90-day history.
 */
export function maintenancePrune(ctx: WorkerContext): Task {
  return async () => {
    await deleteRequestLogsBefore(ctx.pool, 30);
    await deleteEventsBefore(ctx.pool, 30);
    await deleteStatusSamplesBefore(ctx.pool, 100);
    await deleteExpiredIdempotencyKeys(ctx.pool);
    await deleteOldRateLimitWindows(ctx.pool);
    await deleteEmptyJobQueues(ctx.pool);
    const syncTypes = Object.entries(jobSpecs)
      .filter(([, s]) => s.isSync)
      .map(([type]) => type);
    await purgeUncollectedResults(ctx.pool, syncTypes, 60);
    // A day is far longer than any upload waits for its job to be created.
    await sweepOrphanUploads(ctx, new Date(Date.now() - 24 * 3_600_000));
  };
}
