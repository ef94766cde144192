import type { Task } from 'graphile-worker';

import { deleteEventsBefore } from '../../shared/db/queries/events.ts';
import { findReferencedDocumentKeys } from '../../shared/db/queries/fileDocuments.ts';
import { findReferencedFileKeys } from '../../shared/db/queries/files.ts';
import { deleteExpiredIdempotencyKeys } from '../../shared/db/queries/idempotencyKeys.ts';
import { purgeUncollectedResults } from '../../shared/db/queries/jobs.ts';
import { createMeteringPartitions } from '../../shared/db/queries/meteringRecords.ts';
import { deleteExpiredOauthRows } from '../../shared/db/queries/oauthTokens.ts';
import { deleteOldProviderBudgetWindows } from '../../shared/db/queries/providerBudgets.ts';
import { deleteOldRateLimitWindows } from '../../shared/db/queries/rateLimits.ts';
import {
  createRequestLogPartitions,
  deleteRequestLogsBefore,
  dropRequestLogPartitionsBefore,
} from '../../shared/db/queries/requestLogs.ts';
import { deleteExpiredResponseCacheEntries } from '../../shared/db/queries/responseCacheEntries.ts';
import { deleteExpiredSecretReveals } from '../../shared/db/queries/secretReveals.ts';
import { deleteStatusSamplesBefore } from '../../shared/db/queries/statusSamples.ts';
import { deleteOldTokenReservations, deleteOldTokenWindows } from '../../shared/db/queries/tokenLimits.ts';
import { jobSpecs } from '../../shared/jobs/specs.ts';
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
    // Each step runs whatever an earlier one did: a partition drop that times out on its lock must
    // not also skip the hour's other retention. The job still fails, with every error, if any did.
    const failures: unknown[] = [];
    const step = async (name: string, run: () => Promise<unknown>) => {
      try {
        await run();
      } catch (error) {
        failures.push(error);
        ctx.logger.error({ err: error, step: name }, 'maintenance step failed');
      }
    };
    await step('request log partitions past retention', async () => {
      const dropped = await dropRequestLogPartitionsBefore(ctx.pool, requestLogRetentionDays);
      if (dropped.length > 0) ctx.logger.info({ dropped }, 'request log partitions dropped');
    });
    await step('request log rows past retention', () =>
      deleteRequestLogsBefore(ctx.pool, requestLogRetentionDays),
    );
    await step('partitions ahead', async () => {
      const created = [
        ...(await createRequestLogPartitions(ctx.pool, partitionMonthsAhead)),
        ...(await createMeteringPartitions(ctx.pool, partitionMonthsAhead)),
      ];
      if (created.length > 0) ctx.logger.info({ created }, 'partitions created');
    });
    await step('events', () => deleteEventsBefore(ctx.pool, 30));
    await step('status samples', () => deleteStatusSamplesBefore(ctx.pool, 100));
    await step('idempotency keys', () => deleteExpiredIdempotencyKeys(ctx.pool));
    await step('rate limit windows', () => deleteOldRateLimitWindows(ctx.pool));
    await step('token limit windows', async () => {
      await deleteOldTokenWindows(ctx.pool);
      await deleteOldTokenReservations(ctx.pool);
      await deleteOldProviderBudgetWindows(ctx.pool);
    });
    await step('oauth codes, tokens, consents and sessions', () => deleteExpiredOauthRows(ctx.pool));
    await step('console secret reveals past expiry', () => deleteExpiredSecretReveals(ctx.pool));
    await step('response cache entries past their TTL', () => deleteExpiredResponseCacheEntries(ctx.pool));
    // Job queues without jobs (every task's reply queue lives only while it has work). Not
    // GC_TASK_IDENTIFIERS: our identifiers are a small fixed set, and deleting one that a running
    // worker has cached would strand that task's new jobs until the worker restarts.
    await step('job queues', () => ctx.workerUtils.cleanup({ tasks: ['GC_JOB_QUEUES'] }));
    const syncTypes = Object.entries(jobSpecs)
      .filter(([, s]) => s.isSync)
      .map(([type]) => type);
    await step('uncollected results', () => purgeUncollectedResults(ctx.pool, syncTypes, 60));
    // A day is far longer than any upload waits for its job to be created.
    await step('orphan uploads', () => sweepOrphanUploads(ctx, new Date(Date.now() - 24 * 3_600_000)));
    // Older than any upload (direct ones end within the hour, presigned sessions after it).
    await step('orphan file bytes', () =>
      sweepOrphanUploads(ctx, new Date(Date.now() - 24 * 3_600_000), 'files/', findReferencedFileKeys),
    );
    // Parsed forms, exports and PDFs of deleted files, and PDFs of a deck's earlier revisions.
    await step('stale document objects', () =>
      sweepOrphanUploads(
        ctx,
        new Date(Date.now() - 24 * 3_600_000),
        'documents/',
        findReferencedDocumentKeys,
      ),
    );
    if (failures.length > 0) {
      throw new AggregateError(failures, `${failures.length} maintenance steps failed`);
    }
  };
}
