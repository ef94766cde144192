import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeWorkerUtils, parseCrontab, run, type Runner, type WorkerEvents } from 'graphile-worker';
import pg from 'pg';
import type { Registry } from 'prom-client';

import type { Config } from '../shared/config/config.ts';
import { Batcher } from '../shared/db/batcher.ts';
import { makePool } from '../shared/db/pool.ts';
import { pgPoolConnections, slonikPoolConnections } from '../shared/db/poolConnections.ts';
import { markJobsRunning, readUnfinishedJobs } from '../shared/db/queries/jobs.ts';
import { batchedUnbilledFinish } from '../shared/jobs/finish.ts';
import type { Logger } from '../shared/observability/logger.ts';
import { fixtureProviders } from '../shared/providers/fixtures.ts';
import { enqueue } from '../shared/queue/enqueue.ts';
import type { LaneName } from '../shared/queue/lanes.ts';
import { KeyedChannel, NotificationHub } from '../shared/realtime/pubsub.ts';
import { ObjectStore, type ObjectStoreConfig } from '../shared/storage/objectStore.ts';
import { ByteBudget } from './byteBudget.ts';
import type { WorkerContext } from './context.ts';
import { DeferredFinishes } from './deferredFinishes.ts';
import { inputMemoryBytes } from './generationWork.ts';
import { graphileLogger } from './graphileLogger.ts';
import { survivalOfGraphileRejections } from './graphileRejections.ts';
import { type Lane, laneConcurrency, runnerPoolSize, splitIntoLanes } from './lanes.ts';
import { startLiveness } from './liveness.ts';
import { workerMetrics } from './metrics/workerMetrics.ts';
import { makeProbeOcr, makeProbes } from './probes.ts';
import { makeLiveProviders } from './providers/live.ts';
import { DeckRenderer } from './render/deckRenderer.ts';
import { mainRunnerPreset, sideRunnerPreset } from './runnerPresets.ts';
import { laneEmitter, watchStuckPools } from './stuckPools.ts';
import { SupervisedRunner } from './supervisedRunner.ts';
import { makeJobDefinitions, makeTaskList } from './taskList.ts';

const crontabPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'crontab');

export type WorkerHandle = {
  /** The main runner (every task but webhook deliveries, OCR and video renders), as it is now. */
  readonly runner: Runner;
  /** Each lane's runner as it is now: one that stopped on its own has been replaced. */
  runners: Partial<Record<LaneName, Runner>>;
  ctx: WorkerContext;
  /** The process's metrics registry (the api's, when given one). */
  metrics: Registry;
  stop(): Promise<void>;
};

/**
 * The objects every task of a worker process shares, each built once here: the live providers (OCR
 * engines among them), the status probe's own OCR engine, the cancellation channel, the batched
 * finish of unbilled jobs.
 */
export function makeWorkerContext(
  config: Config,
  parts: Pick<WorkerContext, 'pool' | 'hub' | 'logger' | 'objectStore' | 'workerUtils' | 'providerMetrics'>,
): WorkerContext {
  const live = makeLiveProviders(config, {
    pool: parts.pool,
    logger: parts.logger,
    metrics: parts.providerMetrics,
  });
  const probeOcr = makeProbeOcr();
  // Concurrent starts, and concurrent finishes, of this process's jobs share one statement each.
  const markRunning = new Batcher((jobIds: string[]) => markJobsRunning(parts.pool, jobIds));
  const readUnfinished = new Batcher((jobIds: string[]) => readUnfinishedJobs(parts.pool, jobIds));
  const finishUnbilled = batchedUnbilledFinish(parts.pool);
  const inlineFinishes = new DeferredFinishes(finishUnbilled, parts.logger);
  const ctx: WorkerContext = {
    config,
    ...parts,
    inputMemory: new ByteBudget(inputMemoryBytes),
    providers: (livemode) => (livemode ? live : fixtureProviders),
    probeOcr,
    deckRenderer: new DeckRenderer(parts.logger),
    cancellations: new KeyedChannel(parts.hub, 'jobs:cancel'),
    webhookArrivals: new KeyedChannel(parts.hub, 'webhooks:due'),
    markRunning: (jobId) => markRunning.submit(jobId),
    readUnfinished: (jobId) => readUnfinished.submit(jobId),
    finishUnbilled,
    inlineFinishes,
    close: async () => {
      // The runners have stopped: what their last jobs left to write goes out before the pool ends.
      await inlineFinishes.drain();
      ctx.cancellations.close();
      ctx.webhookArrivals.close();
      await live.close();
      await probeOcr.close();
      await ctx.deckRenderer.close();
    },
  };
  return ctx;
}

type RunnerPool = { pgPool: pg.Pool; end(): Promise<void> };

/**
 * A pg pool for graphile-worker whose `end` resolves once every connection has closed: pg's own
 * end() resolves when it has asked them to, and PostgreSQL stopped right after (npm start) would
 * then terminate the ones still closing.
 */
function makeRunnerPool(databaseUrl: string, max: number, logger: Logger): RunnerPool {
  const pgPool = new pg.Pool({ connectionString: databaseUrl, max });
  const open = new Set<Promise<void>>();
  // Errors of idle clients and of clients being connected must be handled, or they crash the process.
  pgPool.on('error', (error) => logger.warn({ err: error }, 'worker pg pool error'));
  pgPool.on('connect', (client) => {
    client.on('error', (error) => logger.warn({ err: error }, 'worker pg client error'));
    const closed = new Promise<void>((resolve) => client.once('end', resolve));
    open.add(closed);
    void closed.then(() => open.delete(closed));
  });
  return {
    pgPool,
    end: async () => {
      await pgPool.end();
      await Promise.all(open);
    },
  };
}

/**
 * Starts the process's graphile-worker runners (worker/lanes.ts: the main one with our crontab,
 * one for webhook deliveries, one for OCR, one for video renders), their heartbeat and reaper, and an initial status probe
 * so GET /status does not read `unknown` for the first five minutes after a deploy. `stop` drains
 * every runner at once: running jobs finish (or are handed back) before the connections close.
 */
export async function startWorker(
  config: Config,
  services: { databaseUrl: string; directDatabaseUrl?: string; s3: ObjectStoreConfig },
  logger: Logger,
  options: { metrics?: Registry } = {},
): Promise<WorkerHandle> {
  const concurrency = laneConcurrency(config);
  // A job holds at most one of these connections at a time, whichever runner it runs on.
  const pool = await makePool(services.databaseUrl, {
    maxPoolSize: concurrency.main + concurrency.webhooks + concurrency.ocr + concurrency.video + 4,
    name: 'worker',
    pooler: config.databasePooler,
  });
  // LISTEN and graphile-worker's runner (LISTEN, session state) need sessions of their own.
  const direct = services.directDatabaseUrl ?? services.databaseUrl;
  const hub = new NotificationHub(direct, logger);
  await hub.start();
  const pgPools = new Map<LaneName, RunnerPool>();
  const runnerPool = (lane: Pick<Lane, 'name' | 'concurrency'>) => {
    const made = makeRunnerPool(direct, runnerPoolSize(lane), logger);
    pgPools.set(lane.name, made);
    return made.pgPool;
  };
  // Each runner fetches on a pool of its own, so no runner waits for another's connections.
  const mainPgPool = runnerPool({ name: 'main', concurrency: concurrency.main });
  // On the main runner's pool, which it leaves open on release: no connection of its own.
  const workerUtils = await makeWorkerUtils({ pgPool: mainPgPool, logger: graphileLogger(logger) });
  // Liveness and metrics listen before the runners start (workers are created during run()), on the
  // one emitter every runner reports to: each runner's pool and workers beat, or another process's
  // reaper would take their jobs for a dead worker's.
  const events = new EventEmitter() as WorkerEvents;
  // Pools named as in svc_db_pool_connections: `worker` (tasks' queries), `graphile_<lane>` (runners).
  const pools = () => [
    slonikPoolConnections('worker', pool),
    ...[...pgPools].map(([lane, made]) => pgPoolConnections(`graphile_${lane}`, made.pgPool)),
  ];
  const metrics = await workerMetrics(config, options.metrics, { pool, logger, events, pools });
  const ctx = makeWorkerContext(config, {
    pool,
    hub,
    logger,
    objectStore: new ObjectStore(services.s3),
    workerUtils,
    providerMetrics: metrics.providers,
  });
  const liveness = startLiveness(ctx, events, `${os.hostname()}:${process.pid}`);
  let stopping: Promise<void> | undefined;
  const watchers: { stop(): void }[] = [];
  const forgetGraphileRejections = survivalOfGraphileRejections(logger);
  ctx.jobOutcomes = metrics.jobs;
  const lanes = splitIntoLanes(makeTaskList(ctx, makeJobDefinitions(ctx), makeProbes()), concurrency);
  // The lanes' current runners: a runner that stops on its own is replaced (see SupervisedRunner).
  const runners: Partial<Record<LaneName, Runner>> = {};
  const supervised: SupervisedRunner[] = [];
  const stopAll = async () => {
    await Promise.all(supervised.map((lane) => lane.stop()));
    for (const watcher of watchers) watcher.stop();
    forgetGraphileRejections();
    await metrics.close();
    await ctx.close();
    await liveness.stop();
    await hub.stop();
    await pool.end();
    await workerUtils.release();
    for (const runnerPool of pgPools.values()) await runnerPool.end();
  };
  // Once: a second signal, or a test that stops its worker before the context's own teardown.
  const stop = () => (stopping ??= stopAll());
  try {
    for (const lane of lanes) {
      const main = lane.name === 'main';
      // The pool is made once per lane: a runner started again fetches on the same connections.
      const pgPool = main ? mainPgPool : runnerPool(lane);
      const laneEvents = laneEmitter(events);
      const start = () =>
        run({
          events: laneEvents,
          pgPool,
          taskList: lane.taskList,
          parsedCronItems: main ? parseCrontab(readFileSync(crontabPath, 'utf8')) : [],
          concurrency: lane.concurrency,
          noHandleSignals: true,
          pollInterval: 2000,
          preset: { worker: main ? mainRunnerPreset(lane.concurrency) : sideRunnerPreset },
          logger: graphileLogger(logger),
        });
      const laneRunner = await SupervisedRunner.start(lane.name, start, logger, (runner) => {
        runners[lane.name] = runner;
      });
      supervised.push(laneRunner);
      watchers.push(
        watchStuckPools(
          laneEvents,
          logger,
          () => stopping !== undefined,
          (workerPool) => {
            liveness.abandon(workerPool.id);
            laneRunner.replace();
          },
        ),
      );
      runners[lane.name] = laneRunner.runner;
    }
  } catch (error) {
    await stop().catch((stopError: unknown) =>
      logger.warn({ err: stopError }, 'stopping a worker that failed to start failed'),
    );
    throw error;
  }
  await pool.transaction((tx) =>
    enqueue(tx, 'status__probe', {}, { jobKey: 'status_probe_boot', maxAttempts: 1 }),
  );
  return {
    get runner() {
      return runners.main!;
    },
    runners,
    ctx,
    metrics: metrics.registry,
    stop,
  };
}
