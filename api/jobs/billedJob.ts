import type { Request, Response } from 'express';
import type { DatabasePool } from 'slonik';

import { reserveCredits } from '../../shared/billing/metering.ts';
import type { Config } from '../../shared/config/config.ts';
import { type JobRow, requestJobCancel } from '../../shared/db/queries/jobs.ts';
import { notify } from '../../shared/db/queries/notifications.ts';
import type { Db } from '../../shared/db/sql.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { type JobCreator, newJobId } from '../../shared/jobs/createJob.ts';
import { type JobType } from '../../shared/jobs/specs.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { clientGone, ClientGoneError } from '../http/clientGone.ts';
import type { IdempotencyStore } from '../idempotency/idempotencyStore.ts';
import type { FinishedJob, JobWaiter } from './jobWaiter.ts';

/** What billed jobs need of the HTTP tier: the pool, the job creator and waiter, the key store. */
export type BilledJobDeps = {
  pool: DatabasePool;
  jobs: JobCreator;
  jobWaiter: JobWaiter;
  config: Pick<Config, 'syncTimeoutMs'>;
  logger: Logger;
  idempotency: IdempotencyStore;
};

export type BilledJob = {
  /** Allocated by the caller that must listen for the job before it exists (newJobId). */
  id?: string;
  type: JobType;
  projectId: string;
  input: Record<string, unknown>;
  maxCostMinor: number;
  /** Rows the operation writes with its job (a video), in the job's transaction. */
  alsoWrite?: (tx: Db, job: JobRow) => Promise<void>;
};

/**
 * Reserves the call's maximum cost (live keys only) and creates its job in ONE transaction: the job
 * exists iff its hold does (and the operation's own rows, `alsoWrite`), and a failed reservation
 * leaves nothing behind. With an Idempotency-Key
 * the key is taken in the same transaction: a synchronous job (`answer` omitted) is keyed by it, an
 * asynchronous one stores its `answer` with it.
 * @throws AppError insufficient_credits / key_spend_limit_reached from reserveCredits;
 *   IdempotencyRace when a request with the same key took it first.
 */
export async function startBilledJob(
  deps: Pick<BilledJobDeps, 'pool' | 'jobs' | 'idempotency'>,
  req: Request,
  job: BilledJob,
  answer?: (row: JobRow) => { status: number; body: unknown; location: string | null },
): Promise<JobRow> {
  const principal = req.principal!;
  const id = job.id ?? newJobId();
  const create = (db: Db, holdId: string | null) =>
    deps.jobs.create(db, {
      id,
      workspaceId: principal.workspaceId,
      projectId: job.projectId,
      keyId: principal.keyId,
      oauthAppId: principal.oauthAppId,
      type: job.type,
      livemode: principal.livemode,
      input: job.input,
      holdId,
      requestId: req.requestId,
    });
  // Test keys reserve nothing: without a key to record, the job alone is one atomic statement.
  if (!principal.livemode && !req.idempotency && !job.alsoWrite) return create(deps.pool, null);
  const row = await deps.pool.transaction(async (tx) => {
    await deps.idempotency.claimInTransaction(tx, req, answer ? null : id);
    const hold = await reserveCredits(tx, {
      principal,
      projectId: job.projectId,
      operation: job.type,
      maxCostMinor: job.maxCostMinor,
      requestId: req.requestId,
    });
    const created = await create(tx, hold?.holdId ?? null);
    await job.alsoWrite?.(tx, created);
    if (answer) await deps.idempotency.recordInTransaction(tx, req, answer(created));
    return created;
  });
  if (req.idempotency) req.idempotency.claimed = true;
  return row;
}

/**
 * Asks the worker running `jobId` to stop: the mark (which a worker that has not started yet reads)
 * and the `jobs:cancel` notification (which a running one hears) commit together.
 */
export async function cancelJob(pool: DatabasePool, jobId: string): Promise<void> {
  await pool.transaction(async (tx) => {
    await requestJobCancel(tx, jobId);
    await notify(tx, 'jobs:cancel', { id: jobId });
  });
}

const failed = () => new AppError('internal_error', 'The generation failed; retry with backoff.');

const outputDiscarded = () =>
  new AppError(
    'idempotent_output_discarded',
    'The first request with this Idempotency-Key succeeded and its output was delivered to it; generation keeps nothing. Send a new key to generate again.',
  );

/**
 * Runs a synchronous job and hands its result over (once; the stored copy is then dropped). The
 * job is watched before `job.start` creates it (with `job.id`): a worker can finish a quick job
 * before the insert's answer is back here, and its notification must not go unheard. A request that
 * takes over the job of an earlier one with its Idempotency-Key (`req.idempotency.resumeJobId`)
 * starts nothing and waits on that job.
 * Errors of `start` (no credits, ...) are thrown as they are. A wait that times out cancels the job,
 * so it is billed only for what it produced; so does a client that disconnects, unless it sent an
 * Idempotency-Key: then the job goes on for its retry to collect.
 * @throws AppError internal_error when the job failed, was cancelled or took too long;
 *   idempotent_output_discarded when a job taken over had already delivered its output.
 */
export async function awaitSyncJob(
  deps: Omit<BilledJobDeps, 'jobs'>,
  req: Request,
  res: Response,
  job: { id: string; start: () => Promise<unknown> },
  signal?: AbortSignal,
): Promise<{ result: unknown; costMinor: number }> {
  const resumed = req.idempotency?.resumeJobId;
  const jobId = resumed ?? job.id;
  const gone = signal ? undefined : clientGone(res);
  const watch = deps.jobWaiter.watch(jobId);
  let done: FinishedJob;
  try {
    if (!resumed) {
      try {
        await job.start();
      } catch (error) {
        watch.close();
        throw error;
      }
    }
    const key = deps.idempotency.holdWhileWaiting(req);
    try {
      done = await watch.wait({
        fresh: !resumed,
        // The finished row is read once and its input and result dropped in the same statement.
        take: true,
        timeoutMs: deps.config.syncTimeoutMs,
        signal: signal ?? gone!.signal,
      });
    } catch (error) {
      if (req.idempotency && error instanceof ClientGoneError) {
        // Its retry takes the job over: it goes on, and the key is free for that retry at once.
        await key.finish('left');
        throw error;
      }
      await cancelJob(deps.pool, jobId).catch((e: unknown) =>
        deps.logger.warn({ err: e, jobId }, 'job cancel failed'),
      );
      await key.finish('failed');
      throw error;
    }
    if (done.status !== 'succeeded') {
      await key.finish('failed');
      throw failed();
    }
    if (done.result === null || done.result === undefined) {
      // Taken already: an earlier request with the key received it.
      await key.finish('delivered');
      throw resumed ? outputDiscarded() : failed();
    }
    await key.finish('delivered');
  } finally {
    gone?.dispose();
  }
  const costMinor = done.cost_minor ?? 0;
  res.locals.costMinor = costMinor;
  return { result: done.result, costMinor };
}

/** Creates a billed synchronous job (see startBilledJob) and waits for its result (see awaitSyncJob). */
export function runBilledJob(
  deps: BilledJobDeps,
  req: Request,
  res: Response,
  job: Omit<BilledJob, 'id'>,
): Promise<{ result: unknown; costMinor: number }> {
  const id = newJobId();
  return awaitSyncJob(deps, req, res, { id, start: () => startBilledJob(deps, req, { ...job, id }) });
}

/** `cost` of a response: the settled charge in the workspace currency (0 for test keys). */
export function costOf(req: Request, costMinor: number) {
  return { amount: costMinor, currency: req.principal!.currency };
}
