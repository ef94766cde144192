import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeWorkerUtils, parseCrontab, run, type Runner, type WorkerEvents } from 'graphile-worker';
import pg from 'pg';

import { type Config, configSecrets, loadConfig } from '../shared/config.ts';
import { Batcher } from '../shared/db/batcher.ts';
import { makePool } from '../shared/db/pool.ts';
import { finishUnbilledJobs, type UnbilledOutcome } from '../shared/db/queries/jobs.ts';
import { enqueue } from '../shared/jobs.ts';
import { createLogger, type Logger } from '../shared/logger.ts';
import { ObjectStore, type ObjectStoreConfig } from '../shared/objectStore.ts';
import { resolveServices, type Services } from '../shared/platform/services.ts';
import { stopOnSignals } from '../shared/platform/stopOnSignals.ts';
import { fixtureProviders } from '../shared/providers/fixtures.ts';
import { KeyedChannel, NotificationHub } from '../shared/pubsub.ts';
import { ByteBudget } from './byteBudget.ts';
import type { WorkerContext } from './context.ts';
import { inputMemoryBytes } from './generationWork.ts';
import { graphileLogger } from './graphileLogger.ts';
import { startLiveness } from './liveness.ts';
import { makeProbeOcr, makeProbes } from './probes.ts';
import { makeLiveProviders } from './providers/live.ts';
import { makeJobDefinitions, makeTaskList } from './taskList.ts';

const crontabPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crontab');

export type WorkerHandle = { runner: Runner; ctx: WorkerContext; stop(): Promise<void> };

/**
 * The objects every task of a worker process shares, each built once here: the live providers (OCR
 * engines among them), the status probe's own OCR engine, the cancellation channel, the batched finish of unbilled jobs.
 */
export function makeWorkerContext(
  config: Config,
  parts: Pick<WorkerContext, 'pool' | 'hub' | 'logger' | 'objectStore' | 'workerUtils'>,
): WorkerContext {
  const live = makeLiveProviders(config);
  const probeOcr = makeProbeOcr();
  const finishUnbilled = new Batcher((outcomes: UnbilledOutcome[]) => finishUnbilledJobs(parts.pool, outcomes));
  const ctx: WorkerContext = {
    config,
    ...parts,
    inputMemory: new ByteBudget(inputMemoryBytes),
    providers: (livemode) => (livemode ? live : fixtureProviders),
    probeOcr,
    cancellations: new KeyedChannel(parts.hub, 'jobs:cancel'),
    finishUnbilled: (outcome) => finishUnbilled.submit(outcome),
    close: async () => {
      ctx.cancellations.close();
      await live.close();
      await probeOcr.close();
    },
  };
  return ctx;
}

/**
 * Starts a graphile-worker pool with our tasks and crontab, its heartbeat and reaper, and an initial
 * status probe so GET /status does not read `unknown` for the first five minutes after a deploy.
 * `stop` drains: running jobs finish (or are handed back) before the connections close.
 */
export async function startWorker(
  config: Config,
  services: { databaseUrl: string; s3: ObjectStoreConfig },
  logger: Logger,
): Promise<WorkerHandle> {
  const pool = await makePool(services.databaseUrl, {
    maxPoolSize: config.workerConcurrency + 4,
    name: 'worker',
  });
  const hub = new NotificationHub(services.databaseUrl, logger);
  await hub.start();
  const pgPool = new pg.Pool({ connectionString: services.databaseUrl, max: config.workerConcurrency + 2 });
  // Errors of idle clients and of clients being connected must be handled, or they crash the process.
  pgPool.on('error', (error) => logger.warn({ err: error }, 'worker pg pool error'));
  pgPool.on('connect', (client) =>
    client.on('error', (error) => logger.warn({ err: error }, 'worker pg client error')),
  );
  // On graphile-worker's pool, which it leaves open on release: no connection of its own.
  const workerUtils = await makeWorkerUtils({ pgPool, logger: graphileLogger(logger) });
  const ctx = makeWorkerContext(config, {
    pool,
    hub,
    logger,
    objectStore: new ObjectStore(services.s3),
    workerUtils,
  });
  // Liveness listens before the pool starts: workers are created during run().
  const events = new EventEmitter() as WorkerEvents;
  const liveness = startLiveness(ctx, events, `${os.hostname()}:${process.pid}`);
  const runner = await run({
    events,
    pgPool,
    taskList: makeTaskList(ctx, makeJobDefinitions(ctx), makeProbes()),
    parsedCronItems: parseCrontab(readFileSync(crontabPath, 'utf8')),
    concurrency: config.workerConcurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    preset: {
      worker: {
        // The pool fetches and locks jobs in batches and completes them in batches: about a third
        // less database work per job under load. Locally queued jobs are locked by the pool's id,
        // which heartbeats like each worker's (see liveness.ts).
        localQueue: { size: config.workerConcurrency + 1 },
        completeJobBatchDelay: 0,
      },
    },
    logger: graphileLogger(logger),
  });
  await pool.transaction((tx) =>
    enqueue(tx, 'status__probe', {}, { jobKey: 'status_probe_boot', maxAttempts: 1 }),
  );
  return {
    runner,
    ctx,
    stop: async () => {
      await runner.stop();
      await ctx.close();
      await liveness.stop();
      await hub.stop();
      await pool.end();
      await workerUtils.release();
      await pgPool.end();
    },
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'worker', { secrets: configSecrets(config) });
  const running: { services?: Services; worker?: WorkerHandle } = {};
  stopOnSignals(logger, async () => {
    if (running.worker) {
      await running.worker.stop();
      logger.info('worker stopped');
    }
    await running.services?.stop();
  });
  running.services = await resolveServices(config, { logger });
  running.worker = await startWorker(config, running.services, logger);
  logger.info({ concurrency: config.workerConcurrency }, 'worker started');
}

if (import.meta.main) await main();
