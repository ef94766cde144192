import type { Request, Response } from 'express';
import type { DatabasePool } from 'slonik';

import { type JobRow, requestJobCancel } from '../../../shared/db/queries/jobs.ts';
import { notify } from '../../../shared/db/queries/notifications.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { type JobType, newJobId } from '../../../shared/jobs.ts';
import { reserveCredits } from '../../../shared/metering.ts';
import { clientGone } from '../../clientGone.ts';
import type { AppDeps } from '../../deps.ts';
import type { FinishedJob } from '../../jobWaiter.ts';

export type BilledJob = {
  /** Allocated by the caller that must listen for the job before it exists (newJobId). */
  id?: string;
  type: JobType;
  projectId: string;
  input: Record<string, unknown>;
  maxCostMinor: number;
};

/**
 * Reserves the call's maximum cost (live keys only) and creates its job in ONE transaction: the job
 * exists iff its hold does, and a failed reservation leaves nothing behind.
 * @throws AppError insufficient_credits / key_spend_limit_reached from reserveCredits.
 */
export function startBilledJob(
  deps: Pick<AppDeps, 'pool' | 'jobs'>,
  req: Request,
  job: {
    id?: string;
    type: JobType;
    projectId: string;
    input: Record<string, unknown>;
    maxCostMinor: number;
  },
): Promise<JobRow> {
  const principal = req.principal!;
  const create = (db: Db, holdId: string | null) =>
    deps.jobs.create(db, {
      id: job.id,
      workspaceId: principal.workspaceId,
      projectId: job.projectId,
      keyId: principal.keyId,
      type: job.type,
      livemode: principal.livemode,
      input: job.input,
      holdId,
      requestId: req.requestId,
    });
  // Test keys reserve nothing: the job alone is one atomic statement, no transaction needed.
  if (!principal.livemode) return create(deps.pool, null);
  return deps.pool.transaction(async (tx) => {
    const hold = await reserveCredits(tx, {
      principal,
      projectId: job.projectId,
      operation: job.type,
      maxCostMinor: job.maxCostMinor,
      requestId: req.requestId,
    });
    return create(tx, hold?.holdId ?? null);
  });
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

/**
 * Runs a synchronous job and hands its result over (once; the stored copy is then dropped). The
 * job is watched before `job.start` creates it (with `job.id`): a worker can finish a quick job
 * before the insert's answer is back here, and its notification must not go unheard.
 * Errors of `start` (no credits, ...) are thrown as they are. A client that disconnects (or
 * `signal` aborts), or a wait that times out, cancels the job so it is billed only for what it
 * produced.
 * @throws AppError internal_error when the job failed, was cancelled or took too long.
 */
export async function awaitSyncJob(
  deps: Pick<AppDeps, 'pool' | 'jobWaiter' | 'config' | 'logger'>,
  res: Response,
  job: { id: string; start: () => Promise<unknown> },
  signal?: AbortSignal,
): Promise<{ result: unknown; costMinor: number }> {
  const gone = signal ? undefined : clientGone(res);
  const watch = deps.jobWaiter.watch(job.id);
  let done: FinishedJob;
  try {
    try {
      await job.start();
    } catch (error) {
      watch.close();
      throw error;
    }
    try {
      done = await watch.wait({
        fresh: true,
        // The finished row is read once and its input and result dropped in the same statement.
        take: true,
        timeoutMs: deps.config.syncTimeoutMs,
        signal: signal ?? gone!.signal,
      });
    } catch (error) {
      await cancelJob(deps.pool, job.id).catch((e: unknown) =>
        deps.logger.warn({ err: e, jobId: job.id }, 'job cancel failed'),
      );
      throw error;
    }
  } finally {
    gone?.dispose();
  }
  if (done.status !== 'succeeded' || done.result === null || done.result === undefined) throw failed();
  const costMinor = done.cost_minor ?? 0;
  res.locals.costMinor = costMinor;
  return { result: done.result, costMinor };
}

/** Creates a billed synchronous job (see startBilledJob) and waits for its result (see awaitSyncJob). */
export function runBilledJob(
  deps: Pick<AppDeps, 'pool' | 'jobs' | 'jobWaiter' | 'config' | 'logger'>,
  req: Request,
  res: Response,
  job: Omit<BilledJob, 'id'>,
): Promise<{ result: unknown; costMinor: number }> {
  const id = newJobId();
  return awaitSyncJob(deps, res, { id, start: () => startBilledJob(deps, req, { ...job, id }) });
}

/** `cost` of a response: the settled charge in the workspace currency (0 for test keys). */
export function costOf(req: Request, costMinor: number) {
  return { amount: costMinor, currency: req.principal!.currency };
}
