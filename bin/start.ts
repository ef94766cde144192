import '../shared/platform/compileCache.ts';

import { startTracing } from '../shared/observability/tracing/startTracing.ts';

/**
 * `npm start`. The api and the worker share this one process, so their spans share one service name:
 * `svc-api` unless OTEL_SERVICE_NAME says otherwise (the worker's spans are its `job …` spans and
 * their children). Tracing starts before the platform is imported, so it can patch Express, http and pg.
 */
const tracing = await startTracing('svc-api');
const { startPlatform } = await import('./platform.ts');
await startPlatform({ afterStop: tracing?.shutdown });
