import { AppError } from '../errors/appError.ts';
import { type BilledJob, type BilledJobDeps, type JobCaller, startBilledJob } from './billedJob.ts';
import { cancelJob } from './cancelJob.ts';
import { newJobId } from './createJob.ts';
import type { FinishedJob } from './jobWaiter.ts';

const failed = () => new AppError('internal_error', 'The generation failed; retry with backoff.');

const outputDiscarded = () =>
  new AppError(
    'idempotent_output_discarded',
    'The first request with this Idempotency-Key succeeded and its output was delivered to it; generation keeps nothing. Send a new key to generate again.',
  );

/**
 * Runs a synchronous job and hands its result over (once; the stored copy is then dropped). The
 * job is watched before `job.start` creates it (with `job.id`): a worker can finish a quick job
 * before the insert's answer is back here, and its notification must not go unheard. A caller that
 * takes over the job of an earlier one with its Idempotency-Key (`idempotency.resumeJobId`)
 * starts nothing and waits on that job.
 * Errors of `start` (no credits, ...) are thrown as they are. A wait that times out cancels the job,
 * so it is billed only for what it produced; so does a caller that leaves (`signal` aborts), unless
 * it holds an Idempotency-Key: then the job goes on for its retry to collect.
 * @throws AppError internal_error when the job failed, was cancelled or took too long;
 *   idempotent_output_discarded when a job taken over had already delivered its output;
 *   the abort reason when `signal` aborts.
 */
export async function awaitSyncJob(
  deps: Omit<BilledJobDeps, 'jobs'>,
  caller: JobCaller,
  job: { id: string; start: () => Promise<unknown> },
  signal: AbortSignal,
): Promise<{ result: unknown; costMinor: number }> {
  const resumed = caller.idempotency?.resumeJobId;
  const jobId = resumed ?? job.id;
  const watch = deps.jobWaiter.watch(jobId);
  if (!resumed) {
    try {
      await job.start();
    } catch (error) {
      watch.close();
      throw error;
    }
  }
  const key = deps.idempotency.holdWhileWaiting(caller);
  let done: FinishedJob;
  try {
    done = await watch.finished({
      fresh: !resumed,
      // The finished row is read once and its input and result dropped in the same statement.
      take: true,
      timeoutMs: deps.config.syncTimeoutMs,
      signal,
    });
  } catch (error) {
    if (caller.idempotency && signal.aborted && error === signal.reason) {
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
  await key.finish('delivered');
  // No result: taken already, by an earlier request with the key.
  if (done.result === null || done.result === undefined) throw resumed ? outputDiscarded() : failed();
  return { result: done.result, costMinor: done.cost_minor ?? 0 };
}

/** Creates a billed synchronous job (see startBilledJob) and waits for its result (see awaitSyncJob). */
export function runBilledJob(
  deps: BilledJobDeps,
  caller: JobCaller,
  job: Omit<BilledJob, 'id'>,
  signal: AbortSignal,
): Promise<{ result: unknown; costMinor: number }> {
  const id = newJobId();
  return awaitSyncJob(
    deps,
    caller,
    { id, start: () => startBilledJob(deps, caller, { ...job, id }) },
    signal,
  );
}
