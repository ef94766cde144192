import type { JobHelpers } from 'graphile-worker';

import { reserveCredits } from '../shared/billing/metering.ts';
import {
  failUnbilledJob,
  findJob,
  type JobRow,
  lockJob,
  markJobQueued,
  requeueJob,
} from '../shared/db/queries/jobs.ts';
import { attachJobHold, findKeySpendCap } from '../shared/db/queries/tasks.ts';
import type { Db } from '../shared/db/sql.ts';
import { AppError, coerceError } from '../shared/errors/appError.ts';
import {
  failJob,
  isPublicJobType,
  type PublicJobError,
  releaseAndFinishJob,
  settleAndFinishJob,
} from '../shared/jobs/finish.ts';
import { type JobType, jobTypeOfTask, marksRunning } from '../shared/jobs/specs.ts';
import { settleTokens } from '../shared/limits/tokenLimits.ts';
import { newId } from '../shared/primitives/ids.ts';
import type { Answerer } from '../shared/providers/types.ts';
import { type InlineJob, jobPayload } from '../shared/queue/taskMap.ts';
import { isStorageUnavailable } from '../shared/storage/storageFailure.ts';
import type { WorkerContext } from './context.ts';

/** What a job's work produced; the engine settles its cost and records it. */
export type JobOutcome = {
  result: unknown;
  usage: Record<string, number>;
  costMinor: number;
  /** The provider and model that answered, priced and named on the metering record. */
  answeredBy?: Answerer;
  /** A cancelled job is billed for what was produced before it stopped. */
  cancelled?: boolean;
};

/** A job as its work sees it: the row, and the workspace currency settlement needs. */
export type RunningJob = JobRow & { currency: string | null };

/**
 * What the work of an inline job sees (see runInlineJob): its payload and task, not its row. Kinds
 * whose synchronous jobs may run inline read no more than this (InlineJobDefinition).
 */
export type InlineRunningJob = Pick<RunningJob, 'id' | 'type' | 'input' | 'livemode'>;

/** How a job failed, as GET /jobs and the job.failed event show it. */

/** A failure that retrying cannot fix (bad input, a provider refusing the request). */
export class PermanentJobError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'PermanentJobError';
    this.code = code;
  }
}

/** Thrown when the worker itself is stopping: the job is handed back to the queue, not failed. */
export class WorkerStopping extends Error {
  constructor() {
    super('worker is shutting down');
    this.name = 'WorkerStopping';
  }
}

/**
 * What one kind of job adds to the lifecycle every job follows (runJob). Only `run` is required;
 * the hooks let a kind prepare its input, reserve credit in the worker, and write rows of its own in
 * the transactions that end the job, so exactly-once settlement, cancellation, shutdown and the
 * reconciler behave the same for every kind.
 */
export type JobDefinition<P = undefined, J extends InlineRunningJob = RunningJob> = {
  /** Reads what the work needs (a parsed input, a conversation). Throw PermanentJobError for bad input. */
  prepare?(job: J): Promise<P>;
  /**
   * For work whose cost is known only here (a task reply): the most it may cost. The engine holds it
   * once per job (a retried attempt reuses the hold); a refusal (no credit, cap spent) fails the job
   * with that code. Omitted: the api reserved when it created the job, or nothing is billed.
   */
  maxCost?(job: RunningJob, prepared: P): number;
  /** The work. Throw PermanentJobError to fail for good, WorkerStopping to hand back, anything else to retry. */
  run(job: J, prepared: P, signal: AbortSignal, helpers: JobHelpers): Promise<JobOutcome>;
  /** Writes of a success, in its transaction (a reply's message); returns the job's result. */
  onSucceeded?(tx: Db, job: RunningJob, prepared: P, outcome: JobOutcome): Promise<unknown>;
  /**
   * Writes of a failure, in its transaction (a reply's failure message); returns the error the job
   * records when the kind words it its own way. The reconciler runs it too.
   */
  onFailed?(tx: Db, job: JobRow, error: PublicJobError): Promise<PublicJobError | void>;
  /** Writes of a cancellation, in its transaction (a video that will never be ready says so). */
  onCancelled?(tx: Db, job: RunningJob): Promise<void>;
  /** After the job reached its end, whoever ended it (removes an upload). Best effort. */
  afterFinished?(job: JobRow): Promise<void>;
};

/**
 * A kind whose synchronous unbilled jobs run inline (createJob's isInline): its preparation and work
 * read only what an inline job carries, and so run the same on a row (a live job) or a payload.
 */
export type InlineJobDefinition<P = undefined> = JobDefinition<P, InlineRunningJob>;

// The one definition table hands every kind of job to the engine, whatever its prepared value.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDefinition = JobDefinition<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyInlineJobDefinition = InlineJobDefinition<any>;
export type JobDefinitions = Partial<Record<JobType, AnyJobDefinition>>;

const unfinished = new Set(['queued', 'running']);

/** Aborts when the job is cancelled (the api publishes on `jobs:cancel`) or the worker shuts down. */
function jobSignal(ctx: WorkerContext, jobId: string, helpers: JobHelpers) {
  const controller = new AbortController();
  const off = ctx.cancellations.on(jobId, () => controller.abort(new Error('cancelled')));
  return { signal: AbortSignal.any([controller.signal, helpers.abortSignal]), done: off };
}

type Failure =
  | { kind: 'handBack'; error: Error }
  | { kind: 'postpone'; error: Error }
  | { kind: 'retry'; error: Error }
  | { kind: 'fail'; error: Error; publicError: PublicJobError };

// A storage outage met on a job's last attempt postpones the attempt (it does not count) this long,
// for as long as the job is younger than the grace: graphile-worker's backoff spends three attempts
// in about ten seconds, less than a storage server takes to restart, and a job must not fail for good
// for that. Past the grace (the bucket deleted, credentials revoked for hours) it fails as any other.
const storageRetrySeconds = 15;
const storageGraceSeconds = 3600;

/** Whether `job` may still wait out a storage outage (see storageGraceSeconds). */
function withinStorageGrace(job: Pick<RunningJob, 'created_at'>): boolean {
  return Date.now() - Date.parse(job.created_at) < storageGraceSeconds * 1000;
}

/**
 * How a thrown error ends this attempt: a stopping worker hands the job back; a permanent error (or
 * a provider refusing the request) fails it at once; anything else is retried by graphile-worker,
 * with backoff, until the last attempt, which a storage outage postpones instead (`mayPostpone`).
 * Read structurally (name, retryable), not with instanceof, so an error from another module realm
 * is judged the same.
 */
function failureOf(thrown: unknown, helpers: JobHelpers, mayPostpone = false): Failure {
  const error = coerceError(thrown);
  if (helpers.abortSignal.aborted || error.name === 'WorkerStopping') return { kind: 'handBack', error };
  const lastAttempt = helpers.job.attempts >= helpers.job.max_attempts;
  if (lastAttempt && mayPostpone && isStorageUnavailable(error)) return { kind: 'postpone', error };
  if (error instanceof PermanentJobError) {
    return { kind: 'fail', error, publicError: { code: error.code, message: error.message } };
  }
  const refused = error.name === 'ProviderError' && (error as { retryable?: unknown }).retryable === false;
  if (refused) {
    return {
      kind: 'fail',
      error,
      publicError: { code: 'internal_error', message: 'The model provider could not complete this request.' },
    };
  }
  if (!lastAttempt) return { kind: 'retry', error };
  return {
    kind: 'fail',
    error,
    publicError: { code: 'internal_error', message: 'The job failed after several attempts.' },
  };
}

/**
 * Fails an unfinished job for good: its hold released, the kind's failure writes, the final status
 * and (public jobs) job.failed, all in one transaction under the job's row lock. Exactly once: a job
 * that already ended is left alone (returns false). Used by the engine and by the reconciler.
 */
export async function failJobForGood(
  ctx: Pick<WorkerContext, 'pool'>,
  definition: AnyJobDefinition | undefined,
  jobId: string,
  error: PublicJobError,
): Promise<boolean> {
  const failed = await ctx.pool.transaction(async (tx) => {
    const current = await lockJob(tx, jobId);
    if (!current || !unfinished.has(current.status)) return false;
    const recorded = (await definition?.onFailed?.(tx, current, error)) ?? error;
    await failJob(tx, current, recorded);
    return true;
  });
  if (failed) await settleJobTokens(ctx, jobId, {});
  return failed;
}

/**
 * Gives back what a job's token reservation (tokens per minute, shared/limits/tokenLimits.ts) held
 * beyond its real count, once the job has ended: after its transaction, not in it, since a
 * reservation locks its windows before the workspace's row and the job's end locks them after. A
 * failed write only leaves the reservation counted until its minute ends.
 */
async function settleJobTokens(
  ctx: Pick<WorkerContext, 'pool'> & { logger?: WorkerContext['logger'] },
  jobId: string,
  usage: Record<string, number>,
): Promise<void> {
  try {
    await settleTokens(ctx.pool, jobId, (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0));
  } catch (error) {
    ctx.logger?.warn({ err: error, jobId }, 'settling a token reservation failed');
  }
}

/**
 * Holds the job's maximum cost once per job (in the worker, for kinds with `maxCost`). The key's cap
 * is read fresh. Returns false when the job must stop here: credit refused (the job is failed with the
 * refusal's code in the same transaction) or the job ended meanwhile.
 */
async function reserveForJob(
  ctx: WorkerContext,
  definition: AnyJobDefinition,
  job: RunningJob,
  maxCostMinor: number,
): Promise<boolean> {
  const projectId = job.project_id!;
  return ctx.pool.transaction(async (tx) => {
    const current = await lockJob(tx, job.id);
    if (!current || !unfinished.has(current.status)) return false;
    if (current.hold_id !== null) {
      job.hold_id = current.hold_id;
      return true;
    }
    try {
      const hold = await reserveCredits(tx, {
        principal: {
          livemode: true,
          workspaceId: job.workspace_id,
          keyId: job.key_id,
          monthlySpendCapMinor: job.key_id === null ? null : await findKeySpendCap(tx, job.key_id),
        },
        projectId,
        operation: job.type,
        maxCostMinor,
        requestId: job.request_id ?? job.id,
      });
      if (hold) {
        await attachJobHold(tx, job.id, hold.holdId);
        job.hold_id = hold.holdId;
      }
      return true;
    } catch (error) {
      // reserveCredits refuses before it writes anything, so this transaction can record the refusal.
      if (
        error instanceof AppError &&
        (error.code === 'insufficient_credits' || error.code === 'key_spend_limit_reached')
      ) {
        const refusal = { code: error.code, message: error.message };
        const recorded = (await definition.onFailed?.(tx, current, refusal)) ?? refusal;
        await failJob(tx, current, recorded);
        return false;
      }
      throw error;
    }
  });
}

/** Settles and records a finished attempt's outcome under the job's row lock (exactly once). */
async function commitOutcome<P>(
  ctx: WorkerContext,
  definition: JobDefinition<P>,
  job: RunningJob,
  prepared: P,
  outcome: JobOutcome,
): Promise<void> {
  const status = outcome.cancelled ? 'cancelled' : 'succeeded';
  if (job.hold_id === null && !job.livemode && !isPublicJobType(job.type) && !definition.onSucceeded) {
    // Nothing held, nothing to charge, nothing to announce: one statement finishes and meters it.
    await ctx.finishUnbilled({
      jobId: job.id,
      status,
      result: outcome.result,
      meteringId: newId('mtr'),
      usage: outcome.usage,
    });
    return;
  }
  await ctx.pool.transaction(async (tx) => {
    const current = await lockJob(tx, job.id);
    if (!current || !unfinished.has(current.status)) return;
    if (outcome.cancelled) await definition.onCancelled?.(tx, job);
    if (outcome.cancelled && outcome.costMinor <= 0) {
      // Stopped before producing anything: released, not billed.
      await releaseAndFinishJob(tx, current, status, outcome.result);
      return;
    }
    const result =
      status === 'succeeded' && definition.onSucceeded
        ? await definition.onSucceeded(tx, job, prepared, outcome)
        : outcome.result;
    await settleAndFinishJob(
      tx,
      { ...current, currency: job.currency ?? 'USD' },
      { status, result, usage: outcome.usage, costMinor: outcome.costMinor, answeredBy: outcome.answeredBy },
    );
  });
  if (job.livemode) await settleJobTokens(ctx, job.id, outcome.usage);
}

/**
 * A stopping worker gives the job back: a new queue job takes over and this attempt does not count
 * (graphile-worker would count it, and on the last attempt never run the job again). If even that
 * fails, the attempt fails and the reconciler ends the job if no attempt is left.
 */
async function handBack(
  ctx: WorkerContext,
  jobId: string,
  rawPayload: unknown,
  helpers: JobHelpers,
  postponed?: Error,
) {
  await requeueJob(ctx.pool, jobId, {
    identifier: helpers.job.task_identifier,
    payload: rawPayload as Record<string, unknown>,
    maxAttempts: Math.max(1, helpers.job.max_attempts - helpers.job.attempts + 1),
    priority: helpers.job.priority,
    ...(postponed ? { delaySeconds: storageRetrySeconds } : {}),
  });
  if (postponed) {
    helpers.logger.warn(
      `job ${jobId} postponed ${storageRetrySeconds} s, its last attempt kept: ${postponed.message}`,
    );
  } else {
    helpers.logger.info(`job ${jobId} handed back: the worker is stopping`);
  }
}

/**
 * An inline job (see shared/jobs/createJob.ts): started from its payload and failed in one statement; its
 * finish, which also meters it, is written after the queue job is let go (see DeferredFinishes).
 * Nothing is held or charged, so a retry after a committed finish only repeats free work, which the
 * finish then ignores.
 */
async function runInlineJob(
  ctx: WorkerContext,
  definition: AnyInlineJobDefinition,
  jobId: string,
  inline: InlineJob,
  rawPayload: unknown,
  helpers: JobHelpers,
): Promise<void> {
  const control = jobSignal(ctx, jobId, helpers);
  const job: InlineRunningJob = { id: jobId, type: inline.type, input: inline.input, livemode: false };
  let outcome: JobOutcome;
  try {
    const prepared = await definition.prepare?.(job);
    outcome = await definition.run(job, prepared, control.signal, helpers);
  } catch (thrown) {
    await endFailedInlineAttempt(ctx, definition, jobId, thrown, rawPayload, helpers);
    return;
  } finally {
    control.done();
  }
  if (outcome.cancelled) ctx.jobOutcomes?.note(helpers.job.id, 'cancelled');
  await ctx.inlineFinishes.add(
    {
      jobId,
      status: outcome.cancelled ? 'cancelled' : 'succeeded',
      result: outcome.result,
      meteringId: newId('mtr'),
      usage: outcome.usage,
    },
    () => afterFinished(ctx, definition, jobId),
  );
}

async function endFailedInlineAttempt(
  ctx: WorkerContext,
  definition: AnyJobDefinition,
  jobId: string,
  thrown: unknown,
  rawPayload: unknown,
  helpers: JobHelpers,
): Promise<void> {
  const failure = failureOf(thrown, helpers);
  if (failure.kind === 'handBack' || failure.kind === 'postpone') {
    await handBack(ctx, jobId, rawPayload, helpers, failure.kind === 'postpone' ? failure.error : undefined);
    ctx.jobOutcomes?.note(helpers.job.id, 'retried');
    return;
  }
  if (failure.kind === 'retry') throw failure.error;
  helpers.logger.error(`job ${jobId} failed for good: ${failure.error.message}`);
  await failUnbilledJob(ctx.pool, jobId, failure.publicError);
  ctx.jobOutcomes?.note(helpers.job.id, 'failed');
  await afterFinished(ctx, definition, jobId);
}

/**
 * Runs one job through queued → running → succeeded | failed | cancelled, for every kind of job
 * (a synchronous one is not marked running: see marksRunning).
 * Idempotent: a job that already ended (the worker died after committing) is skipped; settlement
 * commits with the final status, under the job's row lock, so a retry can never bill twice; the
 * kind's own writes (`onSucceeded`, `onFailed`) join those transactions. Retryable errors put the job
 * back to queued and rethrow so graphile-worker retries with backoff.
 */
export async function runJob<P>(
  ctx: WorkerContext,
  definition: JobDefinition<P>,
  rawPayload: unknown,
  helpers: JobHelpers,
): Promise<void> {
  const { jobId, inline } = jobPayload.parse(rawPayload);
  if (inline) return runInlineJob(ctx, definition, jobId, inline, rawPayload, helpers);
  const job = marksRunning(jobTypeOfTask(helpers.job.task_identifier))
    ? await ctx.markRunning(jobId)
    : await ctx.readUnfinished(jobId);
  if (!job) {
    helpers.logger.info(`job ${jobId} already finished or gone; nothing to do`);
    return;
  }
  const control = jobSignal(ctx, jobId, helpers);
  try {
    if (job.cancel_requested_at !== null) {
      // Cancelled before any work: nothing was produced, so nothing is billed.
      await commitOutcome(ctx, definition, job, undefined as P, {
        result: null,
        usage: {},
        costMinor: 0,
        cancelled: true,
      });
      ctx.jobOutcomes?.note(helpers.job.id, 'cancelled');
      return;
    }
    const prepared = (await definition.prepare?.(job)) as P;
    if (definition.maxCost && job.livemode && job.project_id !== null && job.hold_id === null) {
      const held = await reserveForJob(ctx, definition, job, definition.maxCost(job, prepared));
      if (!held) {
        ctx.jobOutcomes?.note(helpers.job.id, 'failed');
        return;
      }
    }
    const outcome = await definition.run(job, prepared, control.signal, helpers);
    await commitOutcome(ctx, definition, job, prepared, outcome);
    if (outcome.cancelled) ctx.jobOutcomes?.note(helpers.job.id, 'cancelled');
  } catch (thrown) {
    const failure = failureOf(thrown, helpers, withinStorageGrace(job));
    switch (failure.kind) {
      case 'handBack':
        await handBack(ctx, jobId, rawPayload, helpers);
        ctx.jobOutcomes?.note(helpers.job.id, 'retried');
        return;
      case 'postpone':
        await handBack(ctx, jobId, rawPayload, helpers, failure.error);
        ctx.jobOutcomes?.note(helpers.job.id, 'retried');
        return;
      case 'retry':
        await markJobQueued(ctx.pool, jobId);
        throw failure.error;
      case 'fail':
        helpers.logger.error(`job ${jobId} failed for good: ${failure.error.message}`);
        await failJobForGood(ctx, definition, jobId, failure.publicError);
        ctx.jobOutcomes?.note(helpers.job.id, 'failed');
        return;
      default: {
        const never: never = failure;
        throw new Error(`unknown failure ${String(never)}`, { cause: thrown });
      }
    }
  } finally {
    control.done();
    await afterFinished(ctx, definition, jobId);
  }
}

/** Runs the kind's `afterFinished` once the job has ended (by this attempt or an earlier one). */
export async function afterFinished(
  ctx: Pick<WorkerContext, 'pool' | 'logger'>,
  definition: AnyJobDefinition | undefined,
  jobId: string,
): Promise<void> {
  if (!definition?.afterFinished) return;
  try {
    const job = await findJob(ctx.pool, jobId);
    if (job && !unfinished.has(job.status)) await definition.afterFinished(job);
  } catch (error) {
    ctx.logger.warn({ err: error, jobId }, 'after-finish clean-up failed');
  }
}
