import type { Express } from 'express';
import supertest from 'supertest';

import { makeApp } from '../../api/app.ts';
import { RateLimiter } from '../../api/auth/rateLimiter.ts';
import type { AppDeps } from '../../api/deps.ts';
import { makeAppDeps } from '../../api/makeDeps.ts';
import { type Config, loadConfig } from '../../shared/config/config.ts';
import type { OauthOptions } from '../../shared/oauth/oauthOptions.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import { ObjectStore, type ObjectStoreConfig } from '../../shared/storage/objectStore.ts';
import type { WorkerHandle } from '../../worker/startWorker.ts';
import { createTestDatabase, dropTestDatabase } from './database.ts';
import { listenOnLoopback, type LoopbackServer } from './loopbackServer.ts';

export type TestContext = {
  config: Config;
  databaseUrl: string;
  s3: ObjectStoreConfig;
  deps: AppDeps & { close(): Promise<void> };
  app: Express;
  http: ReturnType<typeof supertest>;
  /** Another api instance on the same database, as a second web dyno would be. */
  secondApp(): Promise<{ app: Express; http: ReturnType<typeof supertest>; deps: AppDeps }>;
  startWorker(): Promise<WorkerHandle>;
  /** The app on a loopback port, for clients that need a real connection; closed with the context. */
  listen(): Promise<LoopbackServer>;
  /** Closes `resource` with the context; what the context started after it (a worker) stops first. */
  closeWith(resource: { close(): Promise<void> }): void;
  close(): Promise<void>;
};

export function testEnv(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    NODE_ENV: 'test',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    VALIDATE_RESPONSES: 'true',
    S3_ENDPOINT: process.env.SVC_TEST_S3_ENDPOINT!,
    S3_BUCKET: 'svc-test',
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
    ...overrides,
  };
}

/**
 * Per test file: a database cloned from the template, the api's real dependencies (pool, LISTEN hub,
 * request log, rate limiter) and an Express app driven through supertest. Workers start on demand.
 */
export async function setupTestContext(
  env: Record<string, string> = {},
  options: { rateLimitClock?: () => number; oauth?: OauthOptions } = {},
): Promise<TestContext> {
  const db = await createTestDatabase();
  // A bucket per file as well: a file that asserts what the store holds sees only its own objects.
  const bucket = db.name.replaceAll('_', '-');
  const config = loadConfig({ ...testEnv({ S3_BUCKET: bucket, ...env }), DATABASE_URL: db.url });
  const logger = createLogger(config.logLevel, 'test');
  const s3: ObjectStoreConfig = { ...config.s3, endpoint: config.s3.endpoint! };
  await new ObjectStore(s3).ensureBucket();
  const services = { databaseUrl: db.url, s3 };
  // Every api instance of the context counts rate-limit windows on the clock it is given.
  const withClock = <D extends AppDeps>(built: D): D => {
    const clock = options.rateLimitClock;
    return clock ? { ...built, rateLimiter: new RateLimiter(built.pool, clock) } : built;
  };
  const deps = withClock(await makeAppDeps(config, services, logger, { oauth: options.oauth }));
  // Built on first use: a new app loads its OpenAPI validators in the background, seconds of CPU on a
  // busy machine, which would starve the connections a second instance opens right after setup.
  let app: Express | undefined;
  let http: ReturnType<typeof supertest> | undefined;
  const appOf = () => (app ??= makeApp(deps));
  const closers: (() => Promise<void>)[] = [];
  return {
    config,
    databaseUrl: db.url,
    s3,
    deps,
    get app() {
      return appOf();
    },
    get http() {
      return (http ??= supertest(appOf()));
    },
    secondApp: async () => {
      const other = withClock(await makeAppDeps(config, services, logger, { oauth: options.oauth }));
      closers.push(() => other.close());
      const otherApp = makeApp(other);
      return { app: otherApp, http: supertest(otherApp), deps: other };
    },
    startWorker: async () => {
      // Loaded on first use: most files never start a worker, and jest evaluates every file's module graph
      // anew, so loading the worker's (graphile-worker, the job handlers) up front cost each ~0.2 s of CPU.
      const { startWorker } = await import('../../worker/startWorker.ts');
      const worker = await startWorker(config, services, logger);
      closers.push(() => worker.stop());
      return worker;
    },
    listen: async () => {
      const server = await listenOnLoopback(appOf());
      closers.push(() => server.close());
      return server;
    },
    closeWith: (resource) => {
      closers.push(() => resource.close());
    },
    close: async () => {
      for (const close of closers.reverse()) await close();
      await deps.close();
      await dropTestDatabase(db.name);
    },
  };
}

export const api = (path: string) => `/api/pub/v1${path}`;
export const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });

/** A POST to the public API's `path` as the holder of `key`; chain .send() and .expect() as with supertest. */
export const postAs = (http: ReturnType<typeof supertest>, key: string, path: string) =>
  http.post(api(path)).set(bearer(key));
