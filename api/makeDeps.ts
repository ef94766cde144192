import type { Config } from '../shared/config/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { JobCreator } from '../shared/jobs/createJob.ts';
import { JobWaiter } from '../shared/jobs/jobWaiter.ts';
import type { OauthOptions } from '../shared/oauth/oauthOptions.ts';
import type { Logger } from '../shared/observability/logger.ts';
import { NotificationHub } from '../shared/realtime/pubsub.ts';
import { ObjectStore, type ObjectStoreConfig } from '../shared/storage/objectStore.ts';
import { StreamLeases } from '../shared/streams/streamLeases.ts';
import { accessTokenAuth } from './auth/accessTokens.ts';
import { FailedAuthLimiter } from './auth/failedAuthLimiter.ts';
import { KeyCache } from './auth/keyCache.ts';
import { RateLimiter } from './auth/rateLimiter.ts';
import type { AppDeps } from './deps.ts';
import { CursorKeys } from './http/cursor.ts';
import { RequestIdempotency } from './idempotency/requestIdempotency.ts';
import { makeApiMetrics, registerApiGauges } from './metrics/apiMetrics.ts';
import { startJudoscaleReporter } from './metrics/judoscaleReporter.ts';
import { loadApiDocument } from './openapi/document.ts';
import { RequestLogWriter } from './requestLog/requestLogWriter.ts';
import { OpenStreams } from './sse/openStreams.ts';
import { TaskReplyFeed } from './sse/taskReplyFeed.ts';
import { TextDeltaRelay } from './sse/textDeltaRelay.ts';
import { StatusSnapshots } from './status/statusSnapshots.ts';
import { UploadGauge } from './uploads/uploadGauge.ts';

/** Opens the pool and the LISTEN connection and builds the api's collaborators; `close` undoes it. */
export async function makeAppDeps(
  config: Config,
  services: { databaseUrl: string; directDatabaseUrl?: string; s3: ObjectStoreConfig },
  logger: Logger,
  options: { oauth?: OauthOptions } = {},
): Promise<AppDeps & { drain(): void; close(): Promise<void> }> {
  const pool = await makePool(services.databaseUrl, {
    maxPoolSize: config.databasePoolSize,
    name: 'api',
    pooler: config.databasePooler,
  });
  // LISTEN needs a session of its own: never through a transaction-pooling proxy.
  const hub = new NotificationHub(services.directDatabaseUrl ?? services.databaseUrl, logger);
  await hub.start();
  const metrics = makeApiMetrics(config.metricsEnabled, { exemplars: config.tracing });
  const requestLog = new RequestLogWriter(pool, logger, { observe: metrics?.observe });
  const openStreams = new OpenStreams();
  if (metrics) {
    const providers = Object.keys(config.providers.providers);
    registerApiGauges(metrics.registry, { pool, logger, requestLog, openStreams, providers });
  }
  const judoscale =
    config.judoscaleUrl === undefined
      ? undefined
      : startJudoscaleReporter(pool, logger, { url: config.judoscaleUrl, dyno: config.dyno });
  const shutdown = new AbortController();
  const jobWaiter = new JobWaiter(pool, hub, logger);
  await jobWaiter.start();
  const accessTokens = accessTokenAuth(pool, hub, logger, options.oauth?.clock);
  const streamLeases = new StreamLeases(pool, logger, config.streamsPerWorkspace);
  return {
    config,
    pool,
    hub,
    logger,
    doc: loadApiDocument(),
    rateLimiter: new RateLimiter(pool),
    requestLog,
    metrics: metrics?.registry,
    jobWaiter,
    objectStore: new ObjectStore(services.s3),
    uploads: new UploadGauge(),
    credentialResolvers: [accessTokens.resolve],
    accessTokenCache: accessTokens.cache,
    keyCache: new KeyCache(pool, hub),
    failedAuth: new FailedAuthLimiter(config.authFailuresPerMinute),
    jobs: new JobCreator(pool),
    // Built with the app: their LISTENs are in place before the first stream opens.
    taskReplyFeed: new TaskReplyFeed(pool, hub, logger),
    textDeltas: new TextDeltaRelay(hub),
    streamLeases,
    openStreams,
    oauth: options.oauth,
    cursorKeys: new CursorKeys(pool),
    idempotency: new RequestIdempotency(pool, logger),
    status: new StatusSnapshots(pool),
    shutdown: shutdown.signal,
    drain: () => shutdown.abort(),
    close: async () => {
      shutdown.abort();
      // Streams closed by now have their leases given back before the pool goes.
      await streamLeases.settle();
      await judoscale?.stop();
      await requestLog.close();
      await jobWaiter.close();
      await hub.stop();
      await pool.end();
    },
  };
}
