import { gzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pino } from 'pino';
import { z } from 'zod';

import { requestLogBodyBudgetBytes } from '../../../api/requestLog/redact.ts';
import { RequestLogWriter } from '../../../api/requestLog/requestLogWriter.ts';
import { makePool } from '../../../shared/db/pool.ts';
import type { RequestLogEntry } from '../../../shared/db/queries/requestLogs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { enqueue } from '../../../shared/queue/enqueue.ts';
import { maintenancePrune } from '../../../worker/tasks/maintenance__prune.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { adminQuery, createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { secretSamples } from '../../helpers/secretSamples.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

const rowFor = (requestId: string) => loggedCall(t.deps.pool, requestId);

describe('request log', () => {
  it('records every call off the request path, with redacted bodies', async () => {
    const ok = await t.http
      .get(api('/me'))
      .set(bearer(tenant.testKey))
      .set('x-request-id', 'log-test-0001')
      .expect(200);
    const secretish = { input: ['x'], password: 'hunter2', nested: { apiKey: 'k', long: 'z'.repeat(5000) } };
    await postAs(t.http, tenant.testKey, '/embeddings').set('x-request-id', 'log-test-0002').send(secretish);
    await t.http.get(api('/me')).set('x-request-id', 'log-test-0003').expect(401);
    // Nothing is written synchronously: rows appear with the next 100 ms batch.
    await t.deps.requestLog.flush();
    const me = await rowFor('log-test-0001');
    expect(me).toMatchObject({
      workspace_id: tenant.workspaceId,
      method: 'GET',
      path: '/api/pub/v1/me',
      operation: 'platform.me',
      status: 200,
      cost_minor: 0,
    });
    expect(me!.key_id).toBe(ok.body.key.id);
    expect(me!.latency_ms).toBeGreaterThanOrEqual(0);
    expect(me!.response_body).toMatchObject({ key: { name: 'Key' } });
    const posted = await rowFor('log-test-0002');
    const body = posted!.request_body as { password: string; nested: { apiKey: string; long: string } };
    expect(body.password).toBe('[redacted]');
    expect(body.nested.apiKey).toBe('[redacted]');
    expect(body.nested.long).toMatch(/…\[5000 chars\]$/);
    const anonymous = await rowFor('log-test-0003');
    expect(anonymous).toMatchObject({ workspace_id: null, key_id: null, status: 401 });
  });

  it('keeps token counts (usage.inputTokens, maxTokens) while masking the credentials beside them', async () => {
    const body = {
      input: ['x'],
      maxTokens: 3,
      usage: { inputTokens: 5, outputTokens: 6 },
      access_token: 'tok-1',
      tokens: ['tok-2'],
      idToken: 7,
    };
    await postAs(t.http, tenant.testKey, '/embeddings').set('x-request-id', 'log-test-token').send(body);
    await t.deps.requestLog.flush();
    const row = await rowFor('log-test-token');
    expect(row!.request_body).toEqual({
      input: ['x'],
      maxTokens: 3,
      usage: { inputTokens: 5, outputTokens: 6 },
      access_token: '[redacted]',
      tokens: '[redacted]',
      idToken: '[redacted]',
    });
  });

  it('keeps 30 days: the maintenance task prunes older log rows and events', async () => {
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into request_logs (request_id, workspace_id, method, path, status, latency_ms, created_at)
      values ('old-row-0001', ${tenant.workspaceId}, 'GET', '/x', 200, 1, now() - interval '31 days'),
             ('new-row-0001', ${tenant.workspaceId}, 'GET', '/x', 200, 1, now() - interval '29 days')
    `);
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into events (id, workspace_id, type, data, created_at)
      values ('evt_old', ${tenant.workspaceId}, 'job.succeeded', '{}', now() - interval '31 days'),
             ('evt_new', ${tenant.workspaceId}, 'job.succeeded', '{}', now() - interval '1 day')
    `);
    const ctx = workerContextFor(t);
    await t.deps.pool.transaction((tx) => enqueue(tx, 'maintenance__prune', {}));
    await runDueJobs(t, { maintenance__prune: maintenancePrune(ctx) });
    expect(await rowFor('old-row-0001')).toBeNull();
    expect(await rowFor('new-row-0001')).not.toBeNull();
    const events = await t.deps.pool.anyFirst(
      sql.type(z.object({ id: z.string() }))`select id from events order by id`,
    );
    expect(events).toEqual(['evt_new']);
  });
});

/** `count` object keys of `keyLength` characters each, in one JSON object. */
function manyLongKeys(count: number, keyLength: number): Record<string, string> {
  const body: Record<string, string> = {};
  for (let i = 0; i < count; i++) body[`${i}-${'k'.repeat(keyLength)}`] = 'v';
  return body;
}

const rowSize = (requestId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ bytes: z.number() }))`
    select pg_column_size(r.*)::int as bytes from request_logs r where request_id = ${requestId}
  `);

describe('request log bounds', () => {
  it('logs a call without a key, whatever its gzip body holds, as a small row without bodies', async () => {
    // The measured fault: 20,000 long keys, about 91 KB gzipped, became a 20 MB row.
    const raw = Buffer.from(JSON.stringify(manyLongKeys(20_000, 1000)));
    const gzipped = gzipSync(raw);
    expect(gzipped.length).toBeLessThan(150_000);
    // fetch sends the bytes as they are (supertest would re-encode a Buffer under a JSON type).
    const server = await listenOnLoopback(t.app);
    try {
      const res = await fetch(`${server.origin}${api('/text')}`, {
        method: 'POST',
        headers: {
          'x-request-id': 'log-bounds-0001',
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        },
        body: gzipped,
      });
      expect(res.status).toBe(401);
    } finally {
      await server.close();
    }
    await t.deps.requestLog.flush();
    // The size first: a failure then prints a number, not 20 MB of keys.
    expect(await rowSize('log-bounds-0001')).toBeLessThan(1024);
    const row = await rowFor('log-bounds-0001');
    expect(row).toMatchObject({ status: 401, workspace_id: null, request_body: null, response_body: null });
  });

  it('logs unauthenticated operations (status, the document, unknown paths) without bodies', async () => {
    await t.http.get(api('/status')).set('x-request-id', 'log-bounds-0002').expect(200);
    await t.http.get(api('/openapi.json')).set('x-request-id', 'log-bounds-0003').expect(200);
    await t.http
      .post(api('/no/such/path'))
      .set('x-request-id', 'log-bounds-0004')
      .send({ password: 'x', data: 'y' })
      .expect(404);
    await t.deps.requestLog.flush();
    for (const id of ['log-bounds-0002', 'log-bounds-0003', 'log-bounds-0004']) {
      expect(await rowFor(id)).toMatchObject({ key_id: null, request_body: null, response_body: null });
    }
    // The operation the call addressed, for the console's filter; an unknown path addressed none.
    expect((await rowFor('log-bounds-0002'))!.operation).toBe('platform.status');
    expect((await rowFor('log-bounds-0004'))!.operation).toBeNull();
  });

  it('keeps a bounded, masked copy of a huge authenticated body', async () => {
    let deep: unknown = 'bottom';
    for (let i = 0; i < 60; i++) deep = { down: deep };
    const huge = {
      password: 'hunter2',
      // Under POST /embeddings' 16 MiB body limit, so it is read and logged (bounded).
      input: Array.from({ length: 4000 }, (_, i) => `${i}:${'s'.repeat(3000)}`),
      keys: manyLongKeys(5000, 500),
      deep,
      nested: { apiKey: 'svc-secret-value' },
    };
    await postAs(t.http, tenant.testKey, '/embeddings').set('x-request-id', 'log-bounds-0005').send(huge);
    await t.deps.requestLog.flush();
    const row = await rowFor('log-bounds-0005');
    expect(row!.key_id).not.toBeNull();
    const stored = row!.request_body as Record<string, unknown>;
    expect(Buffer.byteLength(JSON.stringify(stored))).toBeLessThanOrEqual(requestLogBodyBudgetBytes);
    expect(stored.password).toBe('[redacted]');
    expect(JSON.stringify(stored)).not.toContain('hunter2');
    expect(JSON.stringify(stored)).not.toContain('svc-secret-value');
    expect(await rowSize('log-bounds-0005')).toBeLessThan(3 * requestLogBodyBudgetBytes);
  });

  it('stores the rest of a batch when PostgreSQL refuses one of its rows', async () => {
    const writer = new RequestLogWriter(t.deps.pool, createLogger('silent', 'test'));
    const entry = (requestId: string, latencyMs = 1): RequestLogEntry => ({
      request_id: requestId,
      workspace_id: tenant.workspaceId,
      project_id: null,
      key_id: null,
      method: 'GET',
      path: '/api/pub/v1/me',
      status: 200,
      latency_ms: latencyMs,
      cost_minor: 0,
      ip: null,
      request_body: null,
      response_body: null,
      created_at: new Date().toISOString(),
    });
    for (let i = 0; i < 20; i++) {
      // latency_ms is an integer column: 2^40 is out of range (SQLSTATE 22003) for that one row.
      writer.push(entry(`log-batch-${String(i).padStart(2, '0')}`, i === 7 ? 2 ** 40 : 1));
    }
    await writer.close();
    const stored = await t.deps.pool.anyFirst(sql.type(z.object({ request_id: z.string() }))`
      select request_id from request_logs where request_id like 'log-batch-%' order by request_id
    `);
    expect(stored).toHaveLength(19);
    expect(stored).not.toContain('log-batch-07');
  });
});

describe('request log writer during a database outage', () => {
  it('keeps rows through the outage with spaced tries (no busy loop), and stores them once it is back', async () => {
    // A database that stops accepting connections, its sessions ended: every statement fails.
    const scratch = await createTestDatabase();
    const deadPool = await makePool(scratch.url, { maxPoolSize: 1 });
    await adminQuery(`alter database ${scratch.name} with allow_connections false`);
    await adminQuery('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [
      scratch.name,
    ]);
    const lines: { msg: string; rows?: number }[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    let clock = 1_000_000;
    const writer = new RequestLogWriter(deadPool, logger, { now: () => clock });
    const tries = () => lines.filter((l) => l.msg === 'request log flush failed; will retry').length;
    try {
      for (let i = 0; i < 5; i++) {
        writer.push({
          request_id: `log-outage-${i}`,
          workspace_id: null,
          project_id: null,
          key_id: null,
          method: 'GET',
          path: '/api/pub/v1/me',
          status: 200,
          latency_ms: 1,
          cost_minor: 0,
          ip: null,
          request_body: null,
          response_body: null,
          created_at: new Date().toISOString(),
        });
      }
      await writer.flush();
      expect(tries()).toBe(1);
      // Backing off: flushes within the pause do not touch the database.
      for (let i = 0; i < 20; i++) await writer.flush();
      expect(tries()).toBe(1);
      clock += 100;
      await writer.flush();
      expect(tries()).toBe(2);
      clock += 150;
      await writer.flush();
      expect(tries()).toBe(2);
      clock += 50;
      await writer.flush();
      expect(tries()).toBe(3);
      // Rows that met the database out are not dropped after a count of tries: a restart takes seconds.
      expect(writer.pending).toBe(5);
      await adminQuery(`alter database ${scratch.name} with allow_connections true`);
      clock += 60_000;
      await writer.flush();
      expect(writer.pending).toBe(0);
      const stored = await deadPool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*) as n from request_logs where request_id like 'log-outage-%'
      `);
      expect(stored).toBe(5);
      expect(lines.map((l) => l.msg)).not.toContain('request log rows dropped after repeated failures');
    } finally {
      await writer.close();
      await deadPool.end();
      await dropTestDatabase(scratch.name);
    }
  });
});

describe('request log secrets', () => {
  // Kept 30 days: a credential pasted into a prompt must not be, in the request nor in the answer
  // that echoes it (a task's title is its input's first line). One request per format.
  for (const sample of secretSamples()) {
    it(`never stores ${sample.name} pasted into a prompt`, async () => {
      const requestId = `log-secret-${newId('x')}`;
      const res = await postAs(t.http, tenant.testKey, '/tasks')
        .set('x-request-id', requestId)
        .send({ input: `${sample.text} is what the integration sends; why is it refused?` })
        .expect(202);
      expect(res.body.task.title).toContain(sample.secret);
      await t.deps.requestLog.flush();
      const row = await rowFor(requestId);
      expect(row).toMatchObject({ operation: 'tasks.create', status: 202 });
      expect(JSON.stringify([row!.request_body, row!.response_body])).not.toContain(sample.secret);
      expect(row!.request_body).toEqual({ input: '[redacted]' });
    });
  }
});
