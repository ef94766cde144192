import '../shared/platform/compileCache.ts';

import { startTracing } from '../shared/observability/tracing/startTracing.ts';

/**
 * `npm run start:web` (Procfile `web`). Tracing starts before the rest of the api is imported (its
 * modules are loaded dynamically below), so the instrumentations can patch Express, http and pg.
 */
const tracing = await startTracing('svc-api');
const { runPart } = await import('../shared/platform/runPart.ts');
const { startApi } = await import('./startApi.ts');
await runPart('api', startApi, (api, _config, logger) => logger.info({ port: api.port }, 'api listening'), {
  afterStop: tracing?.shutdown,
});
