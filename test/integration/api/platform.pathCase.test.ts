import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { isApiPath } from '../../../api/http/apiPath.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';

let t: TestContext;
let tenant: Tenant;
let origin: string;
let stopServer: () => Promise<void>;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 1000 });
  const server = await listenOnLoopback(t.app);
  origin = server.origin;
  stopServer = server.close;
});
afterAll(async () => {
  await stopServer();
  await t.close();
});

const loggedPaths = async (requestIds: string[]) =>
  t.deps.pool.any(sql.type(z.object({ request_id: z.string(), path: z.string(), status: z.number() }))`
    select request_id, path, status from request_logs where request_id = any(${sql.array(requestIds, 'text')})
  `);

/** A call over real HTTP (fetch leaves the path exactly as given). */
async function call(path: string, requestId: string, init: RequestInit = {}) {
  const res = await fetch(`${origin}${path}`, {
    ...init,
    headers: { 'x-request-id': requestId, ...bearer(tenant.liveKey), ...(init.headers ?? {}) },
  });
  return { status: res.status, body: (await res.json()) as { error?: { code: string } } };
}

describe('one rule for API paths: case-sensitive, in routing and in the log', () => {
  it('does not serve, bill or log /API/PUB/V1/…; it answers not_found', async () => {
    const before = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    const me = await call('/API/PUB/V1/me', 'case-upper-0001');
    expect(me.status).toBe(404);
    expect(me.body.error?.code).toBe('not_found');
    const billed = await call('/API/PUB/V1/embeddings', 'case-upper-0002', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ input: ['billed?'] }),
    });
    expect(billed.status).toBe(404);
    expect(billed.body.error?.code).toBe('not_found');
    const mixed = await call('/api/pub/v1/ME', 'case-upper-0003');
    expect(mixed.status).toBe(404);
    expect(mixed.body.error?.code).toBe('not_found');
    const after = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    expect(after).toEqual(before);
    const metered = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from metering_records where workspace_id = ${tenant.workspaceId}
    `);
    expect(metered).toBe(0);
    const jobs = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from jobs where workspace_id = ${tenant.workspaceId}
    `);
    expect(jobs).toBe(0);
    await t.deps.requestLog.flush();
    // Not API paths by the rule: not logged. The lower-case base with a wrong-case tail is.
    expect((await loggedPaths(['case-upper-0001', 'case-upper-0002'])).length).toBe(0);
    expect(await loggedPaths(['case-upper-0003'])).toEqual([
      { request_id: 'case-upper-0003', path: '/api/pub/v1/ME', status: 404 },
    ]);
  });

  it('logs every call it serves, and serves only what the rule calls an API path', async () => {
    const paths = [
      '/api/pub/v1/me',
      '/api/pub/v1/me/',
      '/api/pub/v1/reference',
      '/api/pub/v1/status',
      '/api/pub/v1/openapi.json',
      '/API/pub/v1/me',
      '/api/PUB/v1/me',
      '/api/pub/V1/me',
      '/api/pub/v1x/me',
      '/api/pub/%76%31/me',
      '/healthz',
    ];
    const results = await Promise.all(
      paths.map(async (path, i) => ({
        path,
        id: `case-all-${String(i).padStart(4, '0')}`,
        ...(await call(path, `case-all-${String(i).padStart(4, '0')}`)),
      })),
    );
    await t.deps.requestLog.flush();
    const logged = new Set((await loggedPaths(results.map((r) => r.id))).map((r) => r.request_id));
    for (const r of results) {
      const pathname = new URL(r.path, origin).pathname;
      // Every path here names an operation that answers 200 when the API serves it.
      const served = r.status === 200 && pathname !== '/healthz';
      expect({ path: r.path, served }).toEqual({ path: r.path, served: isApiPath(pathname) });
      expect({ path: r.path, logged: logged.has(r.id) }).toEqual({
        path: r.path,
        logged: isApiPath(pathname),
      });
    }
  });
});
