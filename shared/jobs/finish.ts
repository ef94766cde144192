import { type Metered, meterUsage, releaseHold } from '../billing/metering.ts';
import type { Answerer } from '../config/providersConfig.ts';
import { Batcher } from '../db/batcher.ts';
import { finishJob, finishUnbilledJobs, type JobRow, type UnbilledOutcome } from '../db/queries/jobs.ts';
import type { DatabasePool, Db } from '../db/sql.ts';
import { recordEvent } from '../events/recordEvent.ts';
import { isJobType, jobSpecs } from './specs.ts';

/**
 * How every job ends with an outcome, whoever ends it: the worker's engine (under the job's row
 * lock), the reconciler, and the api for a test key's fixture job, which is born finished. Unbilled
 * inline jobs take a batched one-statement form of the same finish (finishUnbilledJobs), because
 * on the hot path a transaction per job would halve a worker's throughput; what it writes is this
 * finish's with nothing held, charged or announced.
 */

/** What a finish needs of its job; `hold_id` as the row holds it now (read under its lock). */
export type FinishingJob = Pick<
  JobRow,
  'id' | 'type' | 'workspace_id' | 'project_id' | 'key_id' | 'livemode' | 'request_id' | 'hold_id'
> & { currency: string };

export type JobSuccess = {
  status: 'succeeded' | 'cancelled';
  result: unknown;
  usage: Record<string, number>;
  costMinor: number;
  answeredBy?: Answerer;
};

export type PublicJobError = { code: string; message: string };

/** A public job is readable through GET /jobs/{jobId} and announced as job.succeeded / job.failed. */
export function isPublicJobType(type: string): boolean {
  return isJobType(type) && jobSpecs[type].isPublic;
}

/**
 * Settles the job's usage against its hold (one metering record; the charge is at most what was
 * held), finishes its row with the charge, and announces a public job's success, all in `tx`.
 * Returns the finished row (`cost_minor` is the charge, at most what was held). A job without a
 * project meters nothing (it never held).
 */
export async function settleAndFinishJob(tx: Db, job: FinishingJob, success: JobSuccess): Promise<JobRow> {
  const metered: Metered =
    job.project_id === null
      ? { charge: 0, settle: async () => {} }
      : await meterUsage(tx, {
          holdId: job.hold_id,
          jobId: job.id,
          workspaceId: job.workspace_id,
          projectId: job.project_id,
          keyId: job.key_id,
          operation: job.type,
          livemode: job.livemode,
          usage: success.usage,
          costMinor: success.costMinor,
          currency: job.currency,
          requestId: job.request_id,
          provider: success.answeredBy?.provider ?? null,
          model: success.answeredBy?.model ?? null,
        });
  const finished = await finishJob(tx, job.id, {
    status: success.status,
    result: success.result,
    error: null,
    costMinor: metered.charge,
  });
  if (success.status === 'succeeded' && isPublicJobType(job.type)) {
    await recordEvent(tx, {
      workspaceId: job.workspace_id,
      projectId: job.project_id,
      type: 'job.succeeded',
      data: { job: { id: job.id, type: job.type, status: success.status, result: success.result } },
    });
  }
  // Last: the workspace's balance row is the lock every live call of the workspace shares.
  await metered.settle();
  return finished;
}

/** Ends a job that produced nothing billable: its hold released, nothing charged or announced. */
export async function releaseAndFinishJob(
  tx: Db,
  job: Pick<FinishingJob, 'id' | 'hold_id'>,
  status: 'succeeded' | 'cancelled',
  result: unknown,
): Promise<void> {
  if (job.hold_id !== null) await releaseHold(tx, job.hold_id);
  await finishJob(tx, job.id, { status, result, error: null, costMinor: 0 });
}

/** Fails a job: its hold released, `error` recorded, and a public job's failure announced, in `tx`. */
export async function failJob(
  tx: Db,
  job: Pick<FinishingJob, 'id' | 'type' | 'workspace_id' | 'project_id' | 'hold_id'>,
  error: unknown,
): Promise<void> {
  if (job.hold_id !== null) await releaseHold(tx, job.hold_id);
  await finishJob(tx, job.id, { status: 'failed', result: null, error, costMinor: 0 });
  if (isPublicJobType(job.type)) {
    await recordEvent(tx, {
      workspaceId: job.workspace_id,
      projectId: job.project_id,
      type: 'job.failed',
      data: { job: { id: job.id, type: job.type, status: 'failed', error } },
    });
  }
}

/**
 * The finish of a job that holds nothing and announces nothing (unbilled test-key work), as one
 * statement that finishes and meters it at zero; concurrent calls of a process share one statement.
 * Resolves true when this call finished the job (false: an earlier attempt had).
 */
export function batchedUnbilledFinish(pool: DatabasePool): (outcome: UnbilledOutcome) => Promise<boolean> {
  const batch = new Batcher((outcomes: UnbilledOutcome[]) => finishUnbilledJobs(pool, outcomes));
  return (outcome) => batch.submit(outcome);
}
