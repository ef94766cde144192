import { startApi } from '../../api/server.ts';
import { migrate } from '../../db/migrate.ts';
import { startWorker } from '../../worker/main.ts';
import { baseUrl, loadConfig } from '../config.ts';
import { makePool } from '../db/pool.ts';
import { createLogger } from '../logger.ts';
import { ensureDemoWorkspace } from './demo.ts';
import { resolveServices } from './services.ts';

/**
 * `npm start`: the whole platform in one process tree — embedded PostgreSQL and S3 unless
 * DATABASE_URL / S3_ENDPOINT are set, migrations, the api on PORT and a worker pool.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'platform');
  const services = await resolveServices(config);
  await migrate(services.databaseUrl, (line) => logger.info(line));
  const pool = await makePool(services.databaseUrl, { maxPoolSize: 2, name: 'start' });
  const demo = await ensureDemoWorkspace(pool);
  await pool.end();
  // The api first: the worker's boot-time status probe calls it.
  const api = await startApi(config, services, logger);
  const worker = await startWorker(config, services, logger);
  logger.info({ port: api.port, baseUrl: baseUrl(config), dataDir: config.dataDir }, 'platform ready');
  if (demo) {
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
        `  try: curl -H "Authorization: Bearer ${demo.testKey}" ${baseUrl(config)}/me`,
        '',
      ].join('\n') + '\n',
    );
  }
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping');
    await api.stop();
    await worker.stop();
    await services.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

await main();
