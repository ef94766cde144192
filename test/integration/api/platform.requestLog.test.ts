import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { enqueue } from '../../../shared/jobs.ts';
import { maintenancePrune } from '../../../worker/tasks/maintenance__prune.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
});
afterAll(() => t.close());

const logRow = z.object({
  request_id: z.string(),
  workspace_id: z.string().nullable(),
  key_id: z.string().nullable(),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  latency_ms: z.number(),
  cost_minor: z.number(),
  request_body: z.unknown(),
  response_body: z.unknown(),
});

const rowFor = (requestId: string) =>
  t.deps.pool.maybeOne(sql.type(logRow)`
    select request_id, workspace_id, key_id, method, path, status, latency_ms, cost_minor, request_body, response_body
    from request_logs where request_id = ${requestId}
  `);

describe('request log', () => {
  it('records every call off the request path, with redacted bodies', async () => {
    const ok = await t.http
      .get(api('/me'))
      .set(bearer(tenant.testKey))
      .set('x-request-id', 'log-test-0001')
      .expect(200);
    const secretish = { input: ['x'], password: 'hunter2', nested: { apiKey: 'k', long: 'z'.repeat(5000) } };
    await t.http
      .post(api('/embeddings'))
      .set(bearer(tenant.testKey))
      .set('x-request-id', 'log-test-0002')
      .send(secretish);
    await t.http.get(api('/me')).set('x-request-id', 'log-test-0003').expect(401);
    // Nothing is written synchronously: rows appear with the next 100 ms batch.
    await t.deps.requestLog.flush();
    const me = await rowFor('log-test-0001');
    expect(me).toMatchObject({
      workspace_id: tenant.workspaceId,
      method: 'GET',
      path: '/api/pub/v1/me',
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
