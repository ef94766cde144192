import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { laneConcurrency } from '../../../worker/lanes.ts';
import { startMetricsServer } from '../../../worker/metrics/metricsServer.ts';
import { bearer, postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { fetchWorkerMetrics, parseMetrics, sampleValue, workerMetricsEnv } from '../../helpers/metrics.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ env: await workerMetricsEnv(), worker: true }));
});
afterAll(() => t.close());

const scrapeWorker = async () => {
  const res = await fetchWorkerMetrics(t.config);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
};

describe("a worker process's METRICS_PORT", () => {
  it('serves its job attempts by task and outcome, the fleet queue and its process metrics', async () => {
    const finished = (labels: Record<string, string>) =>
      scrapeWorker().then((m) => sampleValue(m, 'svc_jobs_finished_total', labels));
    const succeededBefore = await finished({ task: 'embeddings__create', outcome: 'succeeded' });
    for (let i = 0; i < 2; i++) {
      await postAs(t.http, tenant.testKey, '/embeddings')
        .send({ input: ['alpha'] })
        .expect(201);
    }
    // A payload the task refuses: an error on its first attempt of several is a retry.
    await t.deps.pool.query(sql.typeAlias('void')`
      select from graphile_worker.add_job('webhook__deliver', '{"nope": true}'::json, max_attempts => 3)
    `);
    const deadline = Date.now() + 30_000;
    let metrics = await scrapeWorker();
    while (
      Date.now() < deadline &&
      (sampleValue(metrics, 'svc_jobs_finished_total', { task: 'embeddings__create', outcome: 'succeeded' }) <
        succeededBefore + 2 ||
        sampleValue(metrics, 'svc_jobs_finished_total', { task: 'webhook__deliver', outcome: 'retried' }) < 1)
    ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      metrics = await scrapeWorker();
    }
    expect(
      sampleValue(metrics, 'svc_jobs_finished_total', { task: 'embeddings__create', outcome: 'succeeded' }),
    ).toBe(succeededBefore + 2);
    expect(
      sampleValue(metrics, 'svc_jobs_finished_total', { task: 'webhook__deliver', outcome: 'retried' }),
    ).toBe(1);
    expect(metrics.get('svc_job_duration_seconds')?.type).toBe('HISTOGRAM');
    for (const family of ['svc_jobs_queued', 'svc_job_queue_latency_seconds', 'svc_jobs_running']) {
      expect(metrics.has(family)).toBe(true);
    }
    expect(metrics.has('nodejs_eventloop_lag_seconds')).toBe(true);
    const rows = await t.deps.pool.anyFirst(sql.type(z.object({ path: z.string() }))`
      select path from request_logs where path = '/metrics'
    `);
    expect(rows).toEqual([]);
  });
});

describe('svc_db_pool_connections on a worker', () => {
  it("reports its task pool and each runner's graphile-worker pool, within their sizes", async () => {
    const metrics = await scrapeWorker();
    const of = (pool: string, state: string) =>
      sampleValue(metrics, 'svc_db_pool_connections', { pool, state });
    const pools = new Set(metrics.get('svc_db_pool_connections')?.samples.map((s) => s.labels.pool));
    expect([...pools].sort()).toEqual(
      ['graphile_main', 'graphile_ocr', 'graphile_video', 'graphile_webhooks', 'worker'].sort(),
    );
    for (const pool of pools) {
      for (const state of ['idle', 'active', 'waiting']) expect(of(pool!, state)).toBeGreaterThanOrEqual(0);
      expect(of(pool!, 'waiting')).toBe(0);
    }
    // Each runner holds a connection for its LISTEN for as long as it runs.
    expect(of('graphile_main', 'active')).toBeGreaterThanOrEqual(1);
    const lanes = Object.values(laneConcurrency(t.config)).reduce((sum, n) => sum + n, 0);
    expect(of('worker', 'idle') + of('worker', 'active')).toBeLessThanOrEqual(lanes + 4);
  });
});

describe("the worker's metrics server", () => {
  it('asks for METRICS_TOKEN when one is set, and serves /metrics alone', async () => {
    const token = 'mtk_0123456789abcdef';
    const own = await freePort();
    const server = await startMetricsServer(new Registry(), own, token, t.deps.logger);
    try {
      const at = (path: string, headers: Record<string, string> = {}) =>
        fetch(`http://127.0.0.1:${own}${path}`, { headers });
      const refused = await at('/metrics');
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="metrics"');
      expect((await at('/metrics', bearer('mtk_0123456789abcdeX'))).status).toBe(401);
      expect((await at('/metrics', bearer(token))).status).toBe(200);
      expect((await at('/other', bearer(token))).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
