import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import supertest from 'supertest';

import { makeApp } from '../../../api/app.ts';
import { makeAppDeps } from '../../../api/makeDeps.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { type FaultProxy, startFaultProxy } from '../../helpers/faultProxy.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitUntil } from './tasks.helpers.ts';

/**
 * An api whose pool reaches PostgreSQL through a proxy that can be taken away: while the database is
 * unreachable, calls answer 503 service_unavailable with Retry-After in the envelope, and the status
 * page says the database is out; once it is back, calls succeed again without a restart.
 */
let t: TestContext;
let proxy: FaultProxy;
let http: ReturnType<typeof supertest>;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 10_000 });
  proxy = await startFaultProxy(t.databaseUrl);
  t.closeWith(proxy);
  const deps = await makeAppDeps(
    t.config,
    { databaseUrl: proxy.url, directDatabaseUrl: t.databaseUrl, s3: t.s3 },
    createLogger('silent', 'test'),
  );
  t.closeWith(deps);
  const app: Express = makeApp(deps);
  http = supertest(app);
});
afterAll(async () => {
  await t.close();
});

describe('while the database is unreachable', () => {
  it('answers 503 service_unavailable with Retry-After, reports the outage, and recovers', async () => {
    await http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);

    proxy.cut();
    // GET /me may still answer from the key cache and the rate limiter's lease; these need the database.
    for (const call of [
      http.post(api('/text')).set(bearer(tenant.liveKey)).send({ prompt: 'During the outage.' }),
      http.get(api('/tasks/task_missing')).set(bearer(tenant.testKey)),
    ]) {
      const res = await call;
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('2');
      expect(res.body).toEqual({
        error: {
          code: 'service_unavailable',
          message: expect.stringMatching(/database/i),
          requestId: expect.any(String),
        },
      });
    }
    // The status page needs no database to say the database is out, and says so for a few seconds only.
    const status = await http.get(api('/status')).expect(200);
    expect(status.body.state).toBe('outage');
    const byComponent = Object.fromEntries(
      (status.body.components as { component: string; state: string }[]).map((c) => [c.component, c.state]),
    );
    expect(byComponent).toEqual({
      api: 'unknown',
      workers: 'unknown',
      database: 'outage',
      storage: 'unknown',
      ocr: 'unknown',
    });
    expect(status.headers['cache-control']).toMatch(/max-age=[1-5]$/);

    proxy.restore();
    await waitUntil(async () => {
      const res = await http.get(api('/me')).set(bearer(tenant.testKey));
      return res.status === 200 ? res : undefined;
    }, 20_000);
  });
});
