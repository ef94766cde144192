import { type JobHelpers, makeWorkerUtils, runOnce, type TaskList, type WorkerUtils } from 'graphile-worker';

import { createLogger } from '../../shared/observability/logger.ts';
import { ObjectStore } from '../../shared/storage/objectStore.ts';
import type { WorkerContext } from '../../worker/context.ts';
import { graphileLogger } from '../../worker/graphileLogger.ts';
import { type JobOutcome, runJob, type RunningJob } from '../../worker/jobEngine.ts';
import { makeWorkerContext } from '../../worker/startWorker.ts';
import type { TestContext } from './context.ts';

/** A worker context on the test database, sharing the api's pool and hub. */
export function workerContextFor(t: TestContext): WorkerContext {
  return makeWorkerContext(t.config, {
    pool: t.deps.pool,
    hub: t.deps.hub,
    logger: createLogger('silent', 'test-worker'),
    objectStore: new ObjectStore(t.s3),
    workerUtils: workerUtilsFor(t.databaseUrl),
  });
}

/** graphile-worker's utilities for a test worker context, opened per call and released after it. */
export function workerUtilsFor(connectionString: string): Pick<WorkerUtils, 'cleanup'> {
  return {
    cleanup: async (options) => {
      const utils = await makeWorkerUtils({
        connectionString,
        logger: graphileLogger(createLogger('silent', 'test')),
      });
      try {
        await utils.cleanup(options);
      } finally {
        await utils.release();
      }
    },
  };
}

/** Runs every job that is due with the given tasks (graphile-worker's runOnce), then returns. */
export async function runDueJobs(t: TestContext, taskList: TaskList): Promise<void> {
  await runOnce({
    connectionString: t.databaseUrl,
    taskList,
    logger: graphileLogger(createLogger('silent', 'test')),
    concurrency: 1,
  });
}

/** Work for a job in tests: the job and its signal in, the outcome out. */
export type JobWork = (job: RunningJob, signal: AbortSignal) => Promise<JobOutcome>;

/**
 * Runs a job through the production job engine with `work` as its whole definition, to its end: an
 * inline job's deferred finish (see DeferredFinishes) has landed when this resolves.
 */
export async function runWork(ctx: WorkerContext, payload: unknown, helpers: JobHelpers, work: JobWork) {
  await runJob(ctx, { run: (job, _prepared, signal) => work(job, signal) }, payload, helpers);
  await ctx.inlineFinishes.drain();
}
