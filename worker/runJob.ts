import type { JobHelpers } from 'graphile-worker';

import { batchedPer } from '../shared/db/batcher.ts';
import {
  failUnbilledJob,
  finishJob,
  finishUnbilledJobs,
  type JobRow,
  lockJob,
  markJobQueued,
  markJobRunning,
} from '../shared/db/queries/jobs.ts';
import { coerceError } from '../shared/errors/appError.ts';
import { recordEvent } from '../shared/events.ts';
import { newId } from '../shared/ids.ts';
import { type InlineJob, isJobType, jobPayload, jobSpecs } from '../shared/jobs.ts';
import { releaseHold, settleUsage } from '../shared/metering.ts';
import { KeyedChannel } from '../shared/pubsub.ts';
import type { WorkerContext } from './context.ts';

/** What a job's work produced; the runner settles its cost and records it. */
export type JobOutcome = {
  result: unknown;
  usage: Record<string, number>;
  costMinor: number;
  /** A cancelled job is billed for what was produced before it stopped. */
  cancelled?: boolean;
};

/** What a job's work gets to know of its job. */
export type WorkJob = Pick<
  JobRow,
  'id' | 'type' | 'workspace_id' | 'project_id' | 'key_id' | 'livemode' | 'input' | 'hold_id' | 'request_id'
>;

export type JobWork = (job: WorkJob, signal: AbortSignal) => Promise<JobOutcome>;

/** A failure that retrying cannot fix (bad input, a provider refusing the request). */
export class PermanentJobError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'PermanentJobError';
    this.code = code;
  }
}

const cancelChannels = new WeakMap<WorkerContext['hub'], KeyedChannel<{ id: string }>>();

// Concurrent finishes of unbilled jobs share one statement (group commit).
const finishUnbilled = batchedPer(finishUnbilledJobs);

/** Aborts when the job is cancelled (the api publishes on `jobs:cancel`) or the worker shuts down. */
function jobSignal(
  ctx: WorkerContext,
  jobId: string,
  helpers: JobHelpers,
): { signal: AbortSignal; done(): void } {
  let channel = cancelChannels.get(ctx.hub);
  if (!channel) {
    channel = new KeyedChannel(ctx.hub, 'jobs:cancel', 'id');
    cancelChannels.set(ctx.hub, channel);
  }
  const controller = new AbortController();
  const off = channel.on(jobId, () => controller.abort(new Error('cancelled')));
  return { signal: AbortSignal.any([controller.signal, helpers.abortSignal]), done: off };
}

type Failure = { retry: boolean; error: Error; publicError: { code: string; message: string } };

/**
 * How a thrown error ends this attempt. Retried (by graphile-worker, with backoff) unless it is
 * permanent or this was the last attempt; a worker that is shutting down hands the job back instead
 * of failing it.
 */
function failureOf(thrown: unknown, helpers: JobHelpers): Failure {
  const error = coerceError(thrown);
  const permanent = error instanceof PermanentJobError;
  const lastAttempt = helpers.job.attempts >= helpers.job.max_attempts;
  return {
    retry: !permanent && (!lastAttempt || helpers.abortSignal.aborted),
    error,
    publicError: {
      code: permanent ? error.code : 'internal_error',
      message: permanent ? error.message : 'The job failed after several attempts.',
    },
  };
}

/**
 * An inline job (see shared/jobs.ts): started from its payload, finished and metered in one
 * statement, failed in one. Nothing is held or charged, so a retry after a committed finish only
 * repeats free work, which the finish then ignores.
 */
async function runInlineJob(
  ctx: WorkerContext,
  jobId: string,
  inline: InlineJob,
  helpers: JobHelpers,
  work: JobWork,
): Promise<void> {
  const control = jobSignal(ctx, jobId, helpers);
  try {
    const outcome = await work({ id: jobId, ...inline, livemode: false, hold_id: null }, control.signal);
    await finishUnbilled(ctx.pool, {
      jobId,
      status: outcome.cancelled ? 'cancelled' : 'succeeded',
      result: outcome.result,
      meteringId: newId('mtr'),
      usage: outcome.usage,
    });
  } catch (thrown) {
    const failure = failureOf(thrown, helpers);
    if (failure.retry) throw failure.error;
    helpers.logger.error(`job ${jobId} failed for good: ${failure.error.message}`);
    await failUnbilledJob(ctx.pool, jobId, failure.publicError);
  } finally {
    control.done();
  }
}

/**
 * Runs one job row through queued → running → succeeded | failed | cancelled. Idempotent: a job that
 * already finished (the worker died after committing) is skipped, and settlement happens in the same
 * transaction as the final status, under the job's row lock, so a retry can never bill twice.
 * Retryable errors put the job back to queued and rethrow so graphile-worker retries with backoff.
 */
export async function runJob(
  ctx: WorkerContext,
  rawPayload: unknown,
  helpers: JobHelpers,
  work: JobWork,
): Promise<void> {
  const { jobId, inline } = jobPayload.parse(rawPayload);
  if (inline) return runInlineJob(ctx, jobId, inline, helpers, work);
  const job = await markJobRunning(ctx.pool, jobId);
  if (!job) {
    helpers.logger.info(`job ${jobId} already finished or gone; nothing to do`);
    return;
  }
  const isPublic = isJobType(job.type) && jobSpecs[job.type].isPublic;
  const control = jobSignal(ctx, jobId, helpers);
  try {
    if (job.cancel_requested_at !== null) {
      // Cancelled before any work: nothing was produced, so nothing is billed.
      await ctx.pool.transaction(async (tx) => {
        const current = await lockJob(tx, jobId);
        if (!current || current.status !== 'running') return;
        if (job.hold_id !== null) await releaseHold(tx, job.hold_id);
        await finishJob(tx, jobId, { status: 'cancelled', result: null, error: null, costMinor: 0 });
      });
      return;
    }
    const outcome = await work(job, control.signal);
    const status = outcome.cancelled ? 'cancelled' : 'succeeded';
    if (job.hold_id === null && !job.livemode && !isPublic) {
      // Nothing held, nothing to charge, nothing to announce: one statement finishes and meters it.
      await finishUnbilled(ctx.pool, {
        jobId,
        status,
        result: outcome.result,
        meteringId: newId('mtr'),
        usage: outcome.usage,
      });
      return;
    }
    await ctx.pool.transaction(async (tx) => {
      const current = await lockJob(tx, jobId);
      if (!current || current.status !== 'running') return;
      if (outcome.cancelled && outcome.costMinor <= 0) {
        // Stopped before producing anything: released, not billed.
        if (job.hold_id !== null) await releaseHold(tx, job.hold_id);
        await finishJob(tx, jobId, { status, result: outcome.result, error: null, costMinor: 0 });
        return;
      }
      const charge =
        job.project_id === null
          ? 0
          : await settleUsage(tx, {
              holdId: job.hold_id,
              jobId,
              workspaceId: job.workspace_id,
              projectId: job.project_id,
              keyId: job.key_id,
              operation: job.type,
              livemode: job.livemode,
              usage: outcome.usage,
              costMinor: outcome.costMinor,
              currency: job.currency,
              requestId: job.request_id,
            });
      await finishJob(tx, jobId, { status, result: outcome.result, error: null, costMinor: charge });
      if (isPublic && status === 'succeeded') {
        await recordEvent(tx, {
          workspaceId: job.workspace_id,
          projectId: job.project_id,
          type: 'job.succeeded',
          data: { job: { id: jobId, type: job.type, status, result: outcome.result } },
        });
      }
    });
  } catch (thrown) {
    const { retry, error, publicError } = failureOf(thrown, helpers);
    if (retry) {
      await markJobQueued(ctx.pool, jobId);
      throw error;
    }
    helpers.logger.error(`job ${jobId} failed for good: ${error.message}`);
    await ctx.pool.transaction(async (tx) => {
      const current = await lockJob(tx, jobId);
      if (!current || current.status !== 'running') return;
      if (job.hold_id !== null) await releaseHold(tx, job.hold_id);
      await finishJob(tx, jobId, { status: 'failed', result: null, error: publicError, costMinor: 0 });
      if (isPublic) {
        await recordEvent(tx, {
          workspaceId: job.workspace_id,
          projectId: job.project_id,
          type: 'job.failed',
          data: { job: { id: jobId, type: job.type, status: 'failed', error: publicError } },
        });
      }
    });
  } finally {
    control.done();
  }
}
