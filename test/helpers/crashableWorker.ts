import { EventEmitter } from 'node:events';

import { run, type WorkerEvents } from 'graphile-worker';

import { loadConfig } from '../../shared/config/config.ts';
import { makePool } from '../../shared/db/pool.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import { NotificationHub } from '../../shared/realtime/pubsub.ts';
import { ObjectStore } from '../../shared/storage/objectStore.ts';
import { graphileLogger } from '../../worker/graphileLogger.ts';
import { runJob } from '../../worker/jobEngine.ts';
import { startLiveness } from '../../worker/liveness.ts';
import { makeWorkerContext } from '../../worker/startWorker.ts';
import { workerUtilsFor } from './workerContext.ts';

/**
 * A real worker process for crash tests: the production runner, liveness and job runner, with one
 * task (deck__export) whose work takes WORK_MS (default: forever). Prints `working <jobId>` when the
 * work starts and `drained` after a graceful SIGTERM.
 */
const config = loadConfig();
const logger = createLogger('silent', 'crashable');
const pool = await makePool(config.databaseUrl!, { maxPoolSize: 4 });
const hub = new NotificationHub(config.databaseUrl!, logger);
await hub.start();
const ctx = makeWorkerContext(config, {
  pool,
  hub,
  logger,
  objectStore: new ObjectStore({ ...config.s3, endpoint: config.s3.endpoint ?? 'http://127.0.0.1:1' }),
  workerUtils: workerUtilsFor(config.databaseUrl!),
});
const workMs = Number(process.argv[2] ?? 'Infinity');
const events = new EventEmitter() as WorkerEvents;
const liveness = startLiveness(ctx, events, `crashable:${process.pid}`);
const runner = await run({
  connectionString: config.databaseUrl!,
  events,
  noHandleSignals: true,
  concurrency: 1,
  logger: graphileLogger(logger),
  taskList: {
    deck__export: (payload, helpers) =>
      runJob(
        ctx,
        {
          run: async (job) => {
            process.stdout.write(`working ${job.id}\n`);
            if (Number.isFinite(workMs)) await new Promise((r) => setTimeout(r, workMs));
            else await new Promise(() => {});
            return { result: { by: 'crashable' }, usage: { pages: 1 }, costMinor: 9 };
          },
        },
        payload,
        helpers,
      ),
  },
});
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void (async () => {
    await runner.stop();
    await ctx.close();
    await liveness.stop();
    await hub.stop();
    await pool.end();
    process.stdout.write('drained\n');
    process.exit(0);
  })();
});
