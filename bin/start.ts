import { startApi } from '../api/server.ts';
import { migrate } from '../db/migrate.ts';
import { baseUrl, loadConfig } from '../shared/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { createLogger } from '../shared/logger.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { startWorker } from '../worker/main.ts';
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
 * `npm start`: the whole platform in one process tree — embedded PostgreSQL and S3 unless
 * DATABASE_URL / S3_ENDPOINT are set, migrations, the api on PORT and a worker pool.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'platform');
  // Signals are handled from the first moment: whatever has started by then is stopped in reverse.
  const closers: (() => Promise<void>)[] = [];
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    for (const close of closers.reverse()) {
      await close().catch((error: unknown) => logger.error({ err: error }, 'shutdown step failed'));
    }
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  const services = await resolveServices(config);
  closers.push(() => services.stop());
  await migrate(services.databaseUrl, (line) => logger.info(line));
  const pool = await makePool(services.databaseUrl, { maxPoolSize: 2, name: 'start' });
  const demo = await ensureDemoWorkspace(pool);
  await pool.end();
  // The api first: the worker's boot-time status probe calls it.
  const api = await startApi(config, services, logger);
  closers.push(() => api.stop());
  const worker = await startWorker(config, services, logger);
  closers.push(() => worker.stop());
  logger.info({ port: api.port, baseUrl: baseUrl(config), dataDir: config.dataDir }, 'platform ready');
  if (demo) printDemo(demo, baseUrl(config));
}

await main();
