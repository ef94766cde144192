import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import pg from 'pg';

import { startApi } from '../../api/startApi.ts';
import { migrate } from '../../db/migrate.ts';
import { type Config, loadConfig } from '../../shared/config/config.ts';
import { makePool } from '../../shared/db/pool.ts';
import type { DatabasePool } from '../../shared/db/sql.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../../shared/embedded/postgres.ts';
import { startEmbeddedS3 } from '../../shared/embedded/s3.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import type { ObjectStoreConfig } from '../../shared/storage/objectStore.ts';
import { startWorker } from '../../worker/startWorker.ts';
import { createTenant, type Tenant } from '../helpers/fixtures.ts';
import { cpuTicks, serverAndPostgresCpuMs } from './cpu.ts';
import type { LoadWorkerResult } from './loadWorker.ts';

export type LoadResult = {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
  /** Share of CPU time the hypervisor gave to other guests during the run (/proc/stat steal). */
  stealPercent: number;
  /** CPU per request of this process's event loop and of PostgreSQL (0 where /proc is missing). */
  serverCpuMsPerCall: number;
  postgresCpuMsPerCall: number;
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * The median of each figure over several runs. Scenarios that compare against a floor alternate
 * the two run by run, so a change in the host's load (steal) falls on both alike.
 */
export function medianResult(runs: LoadResult[]): LoadResult {
  return {
    requestsPerSecond: median(runs.map((r) => r.requestsPerSecond)),
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    errors: runs.reduce((a, r) => a + r.errors, 0),
    non2xx: runs.reduce((a, r) => a + r.non2xx, 0),
    stealPercent: median(runs.map((r) => r.stealPercent)),
    serverCpuMsPerCall: median(runs.map((r) => r.serverCpuMsPerCall)),
    postgresCpuMsPerCall: median(runs.map((r) => r.postgresCpuMsPerCall)),
  };
}

export type Platform = {
  baseUrl: string;
  origin: string;
  tenant: Tenant;
  pool: DatabasePool;
  config: Config;
  stop(): Promise<void>;
};

/**
 * The environment of an api process of a scenario's own (its RSS or its tracing its own): the bench's
 * database and store, listening on `port`, with the rate limit out of the way of the load.
 */
export const apiProcessEnv = (ctx: BenchContext, port: number): Record<string, string> => ({
  PORT: String(port),
  DATABASE_URL: ctx.databaseUrl,
  S3_ENDPOINT: ctx.s3.endpoint,
  S3_BUCKET: ctx.s3.bucket,
  RATE_LIMIT_PER_MINUTE: '100000000',
});

/** What a bench scenario gets: real services on loopback, a load generator and a place to report. */
export type BenchContext = {
  databaseUrl: string;
  /**
   * A second, migration-free database on the same server for a floor's own graphile-worker: its
   * job notifications then wake only its own runner (NOTIFY is per database), not the platform's
   * workers, and the other way round.
   */
  floorDatabaseUrl: string;
  s3: ObjectStoreConfig;
  /**
   * Another database on the bench's server, migrated like the first: for processes of a scenario's
   * own that must not share a queue with the others (a worker takes any job of its database).
   */
  migratedDatabase(name: string): Promise<string>;
  /**
   * Starts an api (listening on a loopback port) and, unless `worker: false`, a worker pool.
   * `databaseUrl`: where DATABASE_URL's pools connect instead (a pooler in front of the bench's
   * database, which stays DATABASE_DIRECT_URL).
   */
  startPlatform(options?: {
    env?: Record<string, string>;
    worker?: boolean;
    databaseUrl?: string;
  }): Promise<Platform>;
  /** Drives `url` with `connections` keep-alive connections for `seconds`. */
  load(options: {
    url: string;
    method?: 'GET' | 'POST';
    headers?: Record<string, string>;
    body?: string;
    /** Bodies sent in turn on each connection instead of one `body` (a mix of queries). */
    bodies?: string[];
    connections?: number;
    seconds?: number;
    /** Requests taking longer count as errors (autocannon's default: 10 s). */
    timeoutSeconds?: number;
    /** Calls per second across all connections (an open-loop rate), as fast as they go without it. */
    rate?: number;
  }): Promise<LoadResult>;
  report(section: string, rows: Record<string, string | number>): void;
  /**
   * ANALYZE both databases: run after a scenario's warm-up, so the measured window sees the table
   * statistics a running system has (autovacuum gathers them within a minute of the first writes),
   * not plans made against the empty tables of a new database.
   */
  analyze(): Promise<void>;
};

export async function load(options: Parameters<BenchContext['load']>[0]): Promise<LoadResult> {
  const before = cpuTicks();
  const cpuBefore = serverAndPostgresCpuMs();
  const worker = new Worker(new URL('./loadWorker.ts', import.meta.url), {
    workerData: {
      url: options.url,
      method: options.method ?? 'GET',
      headers: options.headers,
      body: options.body,
      ...(options.bodies ? { requests: options.bodies.map((body) => ({ body })) } : {}),
      connections: options.connections ?? 32,
      duration: options.seconds ?? 8,
      timeout: options.timeoutSeconds ?? 10,
      ...(options.rate !== undefined && { overallRate: options.rate }),
    },
  });
  const [result] = (await once(worker, 'message')) as [LoadWorkerResult];
  await worker.terminate();
  return {
    requestsPerSecond: result.requestsPerSecond,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
    errors: result.errors,
    non2xx: result.non2xx,
    stealPercent: stealSince(before),
    ...cpuPerCall(cpuBefore, result.total),
  };
}

function cpuPerCall(
  before: { server: number; postgres: number },
  calls: number,
): Pick<LoadResult, 'serverCpuMsPerCall' | 'postgresCpuMsPerCall'> {
  const after = serverAndPostgresCpuMs();
  const per = (ms: number) => (calls > 0 ? Math.round((100 * ms) / calls) / 100 : 0);
  return {
    serverCpuMsPerCall: per(after.server - before.server),
    postgresCpuMsPerCall: per(after.postgres - before.postgres),
  };
}

function stealSince(before: { total: number; steal: number }): number {
  const after = cpuTicks();
  const total = after.total - before.total;
  return total > 0 ? Math.round((100 * (after.steal - before.steal)) / total) : 0;
}

export function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

/** Embedded PostgreSQL and S3 in a temp dir for one bench run. */
export async function makeBenchContext(): Promise<BenchContext & { close(): Promise<void> }> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-bench-'));
  const postgres = await startEmbeddedPostgres(path.join(scratch, 'postgres'));
  await ensureDatabase(postgres.adminUrl, 'bench');
  const databaseUrl = postgres.urlFor('bench');
  await migrate(databaseUrl);
  await ensureDatabase(postgres.adminUrl, 'bench_floor');
  const floorDatabaseUrl = postgres.urlFor('bench_floor');
  const s3Server = await startEmbeddedS3(path.join(scratch, 's3'), 'svc-bench');
  const s3: ObjectStoreConfig = {
    endpoint: s3Server.endpoint,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    bucket: 'svc-bench',
    region: 'us-east-1',
  };
  const stops: (() => Promise<void>)[] = [];
  return {
    databaseUrl,
    floorDatabaseUrl,
    s3,
    load,
    async migratedDatabase(name) {
      await ensureDatabase(postgres.adminUrl, name);
      const url = postgres.urlFor(name);
      await migrate(url);
      return url;
    },
    async analyze() {
      for (const url of [databaseUrl, floorDatabaseUrl]) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        try {
          await client.query('analyze');
        } finally {
          await client.end();
        }
      }
    },
    report(section, rows) {
      process.stdout.write(`\n## ${section}\n`);
      for (const [k, v] of Object.entries(rows)) process.stdout.write(`  ${k.padEnd(44)} ${v}\n`);
    },
    async startPlatform(options = {}) {
      const pooledUrl = options.databaseUrl ?? databaseUrl;
      const config = loadConfig({
        NODE_ENV: 'production',
        LOG_LEVEL: 'silent',
        PORT: '0',
        DATABASE_URL: pooledUrl,
        DATABASE_DIRECT_URL: databaseUrl,
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: s3.bucket,
        RATE_LIMIT_PER_MINUTE: '100000000',
        ...options.env,
      });
      const logger = createLogger('silent', 'bench');
      const services = { databaseUrl: pooledUrl, directDatabaseUrl: databaseUrl, s3 };
      const api = await startApi(config, services, logger);
      const worker = options.worker === false ? undefined : await startWorker(config, services, logger);
      const pool = await makePool(databaseUrl, { maxPoolSize: 4, name: 'bench' });
      const tenant = await createTenant(pool, { credits: 1_000_000_000 });
      const origin = `http://127.0.0.1:${api.port}`;
      const stop = async () => {
        await api.stop();
        await worker?.stop();
        await pool.end();
      };
      stops.push(stop);
      return { baseUrl: `${origin}/api/pub/v1`, origin, tenant, pool, config, stop };
    },
    async close() {
      for (const stop of stops.reverse()) await stop().catch(() => {});
      await s3Server.stop();
      await postgres.stop();
      await rm(scratch, { recursive: true, force: true });
    },
  };
}
