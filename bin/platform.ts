import { type ApiHandle, startApi } from '../api/startApi.ts';
import { migrate } from '../db/migrate.ts';
import { baseUrl, configSecrets, loadConfig } from '../shared/config/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { createLogger } from '../shared/observability/logger.ts';
import { resolveServices, type Services } from '../shared/platform/services.ts';
import { stopOnSignals } from '../shared/platform/stopOnSignals.ts';
import { BucketSetupError, prepareBucket } from '../shared/storage/bucketSetup.ts';
import { ObjectStore } from '../shared/storage/objectStore.ts';
import { startWorker, type WorkerHandle } from '../worker/startWorker.ts';
import { type DemoCredentials, ensureDemoWorkspace } from './demo.ts';

function printDemo(demo: DemoCredentials, url: string): void {
  // Printed once, on the first start: the secrets are stored only as hashes.
  process.stdout.write(
    [
      '',
      'Demo workspace created (shown once; keep these):',
      `  workspace   ${demo.workspaceId}`,
      `  project     ${demo.projectId}`,
      `  member      ${demo.email} / ${demo.password}`,
      `  test key    ${demo.testKey}`,
      `  live key    ${demo.liveKey}`,
      `  try: curl -H "Authorization: Bearer ${demo.testKey}" ${url}/me`,
      '',
    ].join('\n') + '\n',
  );
}

/**
 * `npm start` (bin/start.ts): the whole platform in one process tree — embedded PostgreSQL and S3 unless
 * DATABASE_URL / S3_ENDPOINT are set, the bucket created when missing (or start-up stops, saying why),
 * migrations, the api on PORT and a worker pool.
 * Stopping (SIGTERM, Ctrl-C) drains the api, then the worker, then stops the services.
 */
export async function startPlatform(options: { afterStop?: () => Promise<void> } = {}): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'platform', { secrets: configSecrets(config) });
  // Signals are handled from the first moment: whatever has started by then is stopped.
  const running: { services?: Services; api?: ApiHandle; worker?: WorkerHandle } = {};
  const step = async (name: string, stop: () => Promise<void>) => {
    await stop().then(
      () => logger.info(`${name} stopped`),
      // One part failing to stop must not keep the others (the database above all) running.
      (error: unknown) => logger.error({ err: error }, `${name} failed to stop`),
    );
  };
  stopOnSignals(logger, async () => {
    // The api first: requests in flight may wait on jobs, which the worker still runs meanwhile.
    const { api, worker, services } = running;
    if (api) await step('api', api.stop);
    if (worker) await step('worker', worker.stop);
    if (services) await step('services', services.stop);
    await options.afterStop?.();
  });

  const services = await resolveServices(config, { logger });
  running.services = services;
  try {
    if (await prepareBucket(new ObjectStore(services.s3))) {
      logger.info({ bucket: config.s3.bucket }, 'S3 bucket created');
    }
  } catch (error) {
    if (!(error instanceof BucketSetupError)) throw error;
    // The reason alone, as release says it: a stack would bury what the operator has to fix.
    logger.error(`start-up stopped: ${error.message}`);
    await step('services', services.stop);
    await options.afterStop?.();
    process.exitCode = 1;
    return;
  }
  await migrate(services.directDatabaseUrl, (line) => logger.info(line));
  const pool = await makePool(services.databaseUrl, {
    maxPoolSize: 2,
    name: 'start',
    pooler: config.databasePooler,
  });
  const demo = await ensureDemoWorkspace(pool);
  await pool.end();
  // The api first: the worker's boot-time status probe calls it.
  const api = await startApi(config, services, logger);
  running.api = api;
  // One process: the worker's metrics join the api's, served at the api's GET /metrics (METRICS=off:
  // the worker's own registry, served on METRICS_PORT only).
  running.worker = await startWorker(config, services, logger, { metrics: api.metrics });
  logger.info({ port: api.port, baseUrl: baseUrl(config), dataDir: config.dataDir }, 'platform ready');
  if (demo) printDemo(demo, baseUrl(config));
}
