import '../shared/platform/compileCache.ts';

import { startTracing } from '../shared/observability/tracing/startTracing.ts';

/**
 * `npm run start:worker` (Procfile `worker`). Tracing starts before the rest of the worker is imported
 * (its modules are loaded dynamically below), so the instrumentations can patch http and pg.
 */
const tracing = await startTracing('svc-worker');
const { runPart } = await import('../shared/platform/runPart.ts');
const { startWorker } = await import('./startWorker.ts');
await runPart(
  'worker',
  startWorker,
  (_worker, config, logger) =>
    logger.info(
      {
        concurrency: config.workerConcurrency,
        webhookConcurrency: config.webhookConcurrency,
        ocrEngines: config.ocrEngines,
        videoConcurrency: config.videoConcurrency,
      },
      'worker started',
    ),
  { afterStop: tracing?.shutdown },
);
