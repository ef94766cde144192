import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import express from 'express';
import { Logger, run } from 'graphile-worker';
import { Registry } from 'prom-client';
import supertest from 'supertest';
import { z } from 'zod';

import { metricsEndpoint } from '../../../api/metrics/metricsEndpoint.ts';
import { installErrorHandler } from '../../../api/middleware/installErrorHandler.ts';
import { sql } from '../../../shared/db/sql.ts';
import { registerQueueGauges } from '../../../shared/queue/queueGauges.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
});
afterAll(() => t.close());

const scrape = async () => {
  const res = await t.http.get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(res.text);
};

function addJobs(task: string, count: number, dueSecondsAgo: number) {
  return t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(graphile_worker.add_job(${task}, '{}'::json, run_at => now() - make_interval(secs => ${dueSecondsAgo})))::int as n
    from generate_series(1, ${count})
  `);
}

describe('GET /metrics', () => {
  it('counts REST and MCP tool calls per operation and status class, with their durations', async () => {
    const before = await scrape();
    const ok = { operation: 'platform.me', status_class: '2xx' };
    for (let i = 0; i < 3; i++) await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    await t.http.get(api('/me')).set(bearer('svc_test_nope')).expect(401);
    await t.http.get(api('/no/such/path')).set(bearer(tenant.testKey)).expect(404);
    const task = await postAs(t.http, tenant.testKey, '/tasks').send({ input: 'Count my rows.' }).expect(202);
    const call = { name: 'get_task', arguments: { taskId: task.body.task.id } };
    await postAs(t.http, tenant.testKey, '/mcp')
      .set('accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: call })
      .expect(200);
    const after = await scrape();

    const rose = (labels: Record<string, string>) =>
      sampleValue(after, 'svc_http_requests_total', labels) -
      sampleValue(before, 'svc_http_requests_total', labels);
    expect(after.get('svc_http_requests_total')?.type).toBe('COUNTER');
    expect(rose(ok)).toBe(3);
    expect(rose({ operation: 'platform.me', status_class: '4xx' })).toBe(1);
    expect(rose({ operation: 'unmatched', status_class: '4xx' })).toBe(1);
    expect(rose({ operation: 'tasks.read', status_class: '2xx' })).toBe(1);
    expect(after.get('svc_http_request_duration_seconds')?.type).toBe('HISTOGRAM');
    // The parser keeps no labels for labelled histograms: their counts are read off the text.
    const text = (await t.http.get('/metrics').expect(200)).text;
    const count = /^svc_http_request_duration_seconds_count\{operation="platform\.me"\} (\d+)$/m.exec(text);
    expect(Number(count?.[1])).toBeGreaterThanOrEqual(4);
    // The scrape itself is no API call: it is neither counted nor logged.
    const logged = await t.deps.pool.anyFirst(sql.type(z.object({ path: z.string() }))`
      select path from request_logs where path = '/metrics'
    `);
    expect(logged).toEqual([]);
  });

  it("has the process's default metrics and the request log's pending entries", async () => {
    const families = await scrape();
    for (const name of [
      'nodejs_eventloop_lag_seconds',
      'nodejs_heap_size_used_bytes',
      'process_cpu_seconds_total',
    ]) {
      expect(families.has(name)).toBe(true);
    }
    expect(families.get('svc_request_log_pending')?.samples[0]?.value).toBeGreaterThanOrEqual(0);
  });

  it('shows the fleet queue: due jobs per task and the oldest one’s age while nothing runs them, 0 once drained', async () => {
    // The reply job of the task the first test created would wait on the main lane too.
    await t.deps.pool.query(sql.typeAlias('void')`
      select from graphile_worker.permanently_fail_jobs(
        array(select id from graphile_worker.jobs where task_identifier = 'task__reply'), 'not this test')
    `);
    await addJobs('text__generate', 3, 20);
    await addJobs('webhook__deliver', 2, 4);
    // An earlier scrape's reading may be served for up to 5 s: scrape until this one shows.
    let waiting = await scrape();
    for (let deadline = Date.now() + 15_000; Date.now() < deadline;) {
      if (sampleValue(waiting, 'svc_jobs_queued', { task: 'webhook__deliver' }) === 2) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
      waiting = await scrape();
    }
    expect(sampleValue(waiting, 'svc_jobs_queued', { lane: 'main', task: 'text__generate' })).toBe(3);
    expect(sampleValue(waiting, 'svc_jobs_queued', { lane: 'webhooks', task: 'webhook__deliver' })).toBe(2);
    expect(sampleValue(waiting, 'svc_job_queue_latency_seconds', { lane: 'main' })).toBeGreaterThanOrEqual(
      20,
    );
    expect(
      sampleValue(waiting, 'svc_job_queue_latency_seconds', { lane: 'webhooks' }),
    ).toBeGreaterThanOrEqual(4);
    expect(sampleValue(waiting, 'svc_job_queue_latency_seconds', { lane: 'video' })).toBe(0);
    expect(sampleValue(waiting, 'svc_jobs_running', { lane: 'main' })).toBe(0);

    // Drained by a runner, read on a clock past the 5 s cache.
    let clock = Date.now();
    const registry = new Registry();
    registerQueueGauges(registry, t.deps.pool, t.deps.logger, () => clock);
    expect(
      sampleValue(parseMetrics(await registry.metrics()), 'svc_jobs_queued', { task: 'text__generate' }),
    ).toBe(3);
    let left = 5;
    let drained!: () => void;
    const done = new Promise<void>((resolve) => (drained = resolve));
    const noop = async () => {
      if (--left === 0) drained();
    };
    const runner = await run({
      connectionString: t.databaseUrl,
      concurrency: 2,
      noHandleSignals: true,
      pollInterval: 100,
      logger: new Logger(() => () => {}),
      taskList: { text__generate: noop, webhook__deliver: noop },
    });
    await done;
    await runner.stop();
    const cached = parseMetrics(await registry.metrics());
    expect(sampleValue(cached, 'svc_jobs_queued', { task: 'text__generate' })).toBe(3);
    clock += 5000;
    const fresh = parseMetrics(await registry.metrics());
    expect(sampleValue(fresh, 'svc_jobs_queued', { task: 'text__generate' })).toBe(0);
    expect(sampleValue(fresh, 'svc_job_queue_latency_seconds', { lane: 'main' })).toBe(0);
    expect(sampleValue(fresh, 'svc_job_queue_latency_seconds', { lane: 'webhooks' })).toBe(0);
  });
});

describe('who may scrape', () => {
  const appWith = (token: string | undefined) => {
    const app = express();
    app.set('trust proxy', 'loopback');
    app.get('/metrics', metricsEndpoint(new Registry(), token));
    installErrorHandler(app, t.deps.logger);
    return supertest(app);
  };

  it('with METRICS_TOKEN set: that bearer token, and nothing else', async () => {
    const token = 'mtk_0123456789abcdef';
    const http = appWith(token);
    const refused = await http.get('/metrics').expect(401);
    expect(refused.body.error.code).toBe('invalid_api_key');
    expect(refused.headers['www-authenticate']).toBe('Bearer realm="metrics"');
    await http.get('/metrics').set(bearer('mtk_0123456789abcdeX')).expect(401);
    await http.get('/metrics').set(bearer(token)).expect(200);
  });

  it('without it: loopback and private addresses only', async () => {
    const http = appWith(undefined);
    await http.get('/metrics').expect(200);
    await http.get('/metrics').set('X-Forwarded-For', '10.1.2.3').expect(200);
    const outside = await http.get('/metrics').set('X-Forwarded-For', '8.8.8.8').expect(404);
    expect(outside.body.error.code).toBe('not_found');
  });
});
