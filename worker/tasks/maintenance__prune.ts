import type { Task } from 'graphile-worker';

import { deleteExpiredIdempotencyKeys } from '../../shared/db/queries/idempotencyKeys.ts';
import { purgeUncollectedResults } from '../../shared/db/queries/jobs.ts';
import { createMeteringPartitions } from '../../shared/db/queries/meteringRecords.ts';
import { deleteOldRateLimitWindows } from '../../shared/db/queries/rateLimits.ts';
import {
  createRequestLogPartitions,
  deleteRequestLogsBefore,
  dropRequestLogPartitionsBefore,
} from '../../shared/db/queries/requestLogs.ts';
import { deleteStatusSamplesBefore } from '../../shared/db/queries/statusSamples.ts';
import { deleteEventsBefore } from '../../shared/events.ts';
import { jobSpecs } from '../../shared/jobs.ts';
import type { WorkerContext } from '../context.ts';
import { sweepOrphanUploads } from '../sweepUploads.ts';

/** The request log is kept 30 days (spec). */
export const requestLogRetentionDays = 30;
// This month and two ahead: two months of missed hourly runs before a row lands in a default partition.
const partitionMonthsAhead = 2;

/**
 * Hourly. Retention: the request log is kept 30 days (spec), whole monthly partitions dropped once
 * past it and the remaining older rows deleted; events with their webhook delivery log 30 days;
 * status samples cover the 90-day history. Metering records are billing records and are kept.
 * Partitions of the request log and metering records are created ahead of the calendar.
 */
export function maintenancePrune(ctx: WorkerContext): Task {
  return async () => {
    const dropped = await dropRequestLogPartitionsBefore(ctx.pool, requestLogRetentionDays);
    await deleteRequestLogsBefore(ctx.pool, requestLogRetentionDays);
    const created = [
      ...(await createRequestLogPartitions(ctx.pool, partitionMonthsAhead)),
      ...(await createMeteringPartitions(ctx.pool, partitionMonthsAhead)),
    ];
    if (dropped.length > 0 || created.length > 0) {
      ctx.logger.info({ dropped, created }, 'partitions maintained');
    }
    await deleteEventsBefore(ctx.pool, 30);
    await deleteStatusSamplesBefore(ctx.pool, 100);
    await deleteExpiredIdempotencyKeys(ctx.pool);
    await deleteOldRateLimitWindows(ctx.pool);
    // Job queues without jobs (every task's reply queue lives only while it has work). Not
    // GC_TASK_IDENTIFIERS: our identifiers are a small fixed set, and deleting one that a running
    // worker has cached would strand that task's new jobs until the worker restarts.
    await ctx.workerUtils.cleanup({ tasks: ['GC_JOB_QUEUES'] });
    const syncTypes = Object.entries(jobSpecs)
      .filter(([, s]) => s.isSync)
      .map(([type]) => type);
    await purgeUncollectedResults(ctx.pool, syncTypes, 60);
    // A day is far longer than any upload waits for its job to be created.
    await sweepOrphanUploads(ctx, new Date(Date.now() - 24 * 3_600_000));
  };
}
