import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import {
  authorize,
  codeExchange,
  type FormClient,
  type Harness,
  type RegisteredApp,
  startHarness,
} from './harness.ts';

let h: Harness;
let app: RegisteredApp;
let browser: FormClient;

beforeAll(async () => {
  h = await startHarness();
  await h.t.startWorker();
  app = await h.registerApp({
    scopes: ['staff.list', 'tasks.read', 'tasks.create', 'embeddings.create', 'offline_access'],
  });
  browser = await h.signIn();
});
afterAll(() => h.close());

/** A token for the person's member in `memberId`'s workspace, with these scopes (consent asked each time). */
async function tokenFor(memberId: string, scope: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url');
  const url = h.authorizeUrl(app, scope, verifier, { prompt: 'consent' });
  const back = await authorize(browser, url, { member: memberId });
  const res = await h.postToken(
    codeExchange({
      code: back.searchParams.get('code')!,
      redirectUri: app.redirectUri,
      verifier,
      clientId: app.clientId,
      clientSecret: app.clientSecret!,
    }),
  );
  return ((await res.json()) as { access_token: string }).access_token;
}

const call = (token: string, method: string, path: string, body?: unknown) =>
  fetch(`${h.base}/api/pub/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });

async function eventually<T>(read: () => Promise<T | null>, timeoutMs = 5_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (value !== null) return value;
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('access tokens on the public API', () => {
  it('limit operations to the approved scopes (api_key_operation_scope)', async () => {
    const token = await tokenFor(h.tenant.memberId, 'staff.list tasks.read');
    expect((await call(token, 'GET', '/staff')).status).toBe(200);
    const outside = await call(token, 'POST', '/tasks', { title: 'x', message: 'hello' });
    expect(outside.status).toBe(403);
    expect(((await outside.json()) as { error: { code: string } }).error.code).toBe(
      'api_key_operation_scope',
    );
    const me = (await (await call(token, 'GET', '/me')).json()) as Record<string, unknown>;
    expect(me).toMatchObject({
      app: { id: h.tenant.projectId },
      scope: { level: 'operation', operations: ['staff.list', 'tasks.read'] },
    });
  });

  it("spend the chosen workspace's credits and are attributed to the app's project in the request log and metering", async () => {
    const token = await tokenFor(h.second.memberId, 'embeddings.create staff.list');
    const res = await call(token, 'POST', '/embeddings', { input: ['a', 'b'] });
    expect(res.status).toBe(201);
    const requestId = res.headers.get('x-request-id')!;
    const log = await eventually(() => loggedCall(h.t.deps.pool, requestId));
    expect(log).toMatchObject({
      workspace_id: h.second.workspaceId,
      project_id: h.tenant.projectId,
      oauth_app_id: app.id,
    });
    const metered = await h.t.deps.pool.one(
      sql.type(
        z.object({
          workspace_id: z.string(),
          project_id: z.string(),
          oauth_app_id: z.string(),
          cost_minor: z.number(),
        }),
      )`select workspace_id, project_id, oauth_app_id, cost_minor from metering_records where request_id = ${requestId}`,
    );
    expect(metered).toMatchObject({
      workspace_id: h.second.workspaceId,
      project_id: h.tenant.projectId,
      oauth_app_id: app.id,
    });
    expect(metered.cost_minor).toBeGreaterThan(0);
    const balance = await h.t.deps.pool.oneFirst(sql.type(z.object({ balance_minor: z.number() }))`
      select balance_minor from workspaces where id = ${h.second.workspaceId}
    `);
    expect(balance).toBe(50_000 - metered.cost_minor);
  });

  it('stop at once for a person removed from the workspace', async () => {
    const token = await tokenFor(h.second.memberId, 'staff.list');
    expect((await call(token, 'GET', '/staff')).status).toBe(200);
    await h.t.deps.pool.query(sql.typeAlias('void')`delete from members where id = ${h.second.memberId}`);
    const status = await eventually(async () => {
      const s = (await call(token, 'GET', '/staff')).status;
      return s === 401 ? s : null;
    }, 2_000);
    expect(status).toBe(401);
  });
});
