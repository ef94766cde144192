import { randomBytes } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import {
  authorize,
  type FormClient,
  type Harness,
  inputValue,
  type RegisteredApp,
  startHarness,
} from './harness.ts';

// A person approving an app again: what happens to the tokens the earlier consent gave it.
let h: Harness;
let browser: FormClient;

beforeAll(async () => {
  h = await startHarness();
  browser = await h.signIn();
});
afterAll(() => h.close());

// A = staff.list (GET /staff), B = tasks.read (GET /tasks/{id}).
const newApp = () => h.registerApp({ scopes: ['staff.list', 'tasks.read', 'offline_access'] });

type Code = { code: string; verifier: string };

function authorizeUrl(app: RegisteredApp, scope: string, verifier: string, prompt: boolean): URL {
  return h.authorizeUrl(app, scope, verifier, prompt ? { prompt: 'consent' } : {});
}

/** The person approves `scope` on the consent page (prompt=consent), in the tenant workspace. */
async function approve(app: RegisteredApp, scope: string): Promise<Code> {
  const verifier = randomBytes(32).toString('base64url');
  const back = await authorize(browser, authorizeUrl(app, scope, verifier, true), {
    member: h.tenant.memberId,
  });
  return { code: back.searchParams.get('code')!, verifier };
}

async function token(app: RegisteredApp, fields: Record<string, string>) {
  const res = await h.postToken({
    ...fields,
    client_id: app.clientId,
    client_secret: app.clientSecret!,
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

const exchange = (app: RegisteredApp, c: Code) =>
  token(app, {
    grant_type: 'authorization_code',
    code: c.code,
    redirect_uri: app.redirectUri,
    code_verifier: c.verifier,
  });
const refresh = (app: RegisteredApp, refreshToken: string) =>
  token(app, { grant_type: 'refresh_token', refresh_token: refreshToken });

async function tokensFor(app: RegisteredApp, scope: string) {
  const res = await exchange(app, await approve(app, scope));
  expect(res.status).toBe(200);
  return { access: res.body.access_token!, refresh: res.body.refresh_token! };
}

const call = async (accessToken: string, path: string) => {
  const res = await fetch(`${h.base}/api/pub/v1${path}`, {
    headers: { authorization: `Bearer ${accessToken}` },
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code };
};
const listStaff = (accessToken: string) => call(accessToken, '/staff');
// Allowed, it reaches the handler (no such task); without tasks.read it stops at the scope check.
const readTask = (accessToken: string) => call(accessToken, '/tasks/task_none');

const grantScopes = (app: RegisteredApp) =>
  h.t.deps.pool.oneFirst(sql.type(z.object({ scopes: z.array(z.string()) }))`
    select g.scopes from oauth_grants g join oauth_apps a on a.id = g.app_id
    where a.client_id = ${app.clientId} and g.member_id = ${h.tenant.memberId} and g.revoked_at is null
  `);

describe('approving an app again', () => {
  it('with fewer scopes ends the tokens and unexchanged codes of the wider consent', async () => {
    const app = await newApp();
    const old = await tokensFor(app, 'staff.list tasks.read offline_access');
    expect(await readTask(old.access)).toEqual({ status: 404, code: 'not_found' });
    const pending = await approve(app, 'staff.list tasks.read offline_access');

    // The consent page says what allowing there takes away.
    const verifier = randomBytes(32).toString('base64url');
    const page = await browser.get(authorizeUrl(app, 'staff.list offline_access', verifier, true).href);
    expect(page.text.replace(/\s+/g, ' ')).toContain(
      'In Test workspace, allowing replaces the access you gave it before: it can no longer',
    );
    const narrowed = await authorize(
      browser,
      authorizeUrl(app, 'staff.list offline_access', verifier, true),
      {
        member: h.tenant.memberId,
      },
    );
    expect(await grantScopes(app)).toEqual(['staff.list', 'offline_access']);

    // The wider refresh token, access token and code are all dead.
    expect(await refresh(app, old.refresh)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect(await readTask(old.access)).toEqual({ status: 401, code: 'api_key_revoked' });
    expect(await listStaff(old.access)).toMatchObject({ status: 401 });
    expect(await exchange(app, pending)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });

    // The new consent's code gives exactly the narrower access.
    const fresh = await exchange(app, { code: narrowed.searchParams.get('code')!, verifier });
    expect(fresh).toMatchObject({ status: 200, body: { scope: 'staff.list offline_access' } });
    expect(await listStaff(fresh.body.access_token!)).toEqual({ status: 200, code: undefined });
    expect(await readTask(fresh.body.access_token!)).toEqual({
      status: 403,
      code: 'api_key_operation_scope',
    });
    const rotated = await refresh(app, fresh.body.refresh_token!);
    expect(rotated).toMatchObject({ status: 200, body: { scope: 'staff.list offline_access' } });
  });

  it('without offline_access ends the refresh token it granted before', async () => {
    const app = await newApp();
    const old = await tokensFor(app, 'staff.list offline_access');
    await approve(app, 'staff.list');
    expect(await refresh(app, old.refresh)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });

  it('with the same or more scopes keeps the tokens it has', async () => {
    const app = await newApp();
    const old = await tokensFor(app, 'staff.list offline_access');
    await approve(app, 'staff.list offline_access');
    expect(await listStaff(old.access)).toEqual({ status: 200, code: undefined });
    await approve(app, 'staff.list tasks.read offline_access');
    expect(await grantScopes(app)).toEqual(['staff.list', 'tasks.read', 'offline_access']);
    expect(await listStaff(old.access)).toEqual({ status: 200, code: undefined });
    const rotated = await refresh(app, old.refresh);
    expect(rotated).toMatchObject({ status: 200, body: { scope: 'staff.list offline_access' } });
    // The consent page of a wider request has nothing to warn about.
    const page = await browser.get(
      authorizeUrl(app, 'staff.list tasks.read offline_access', 'v'.repeat(43), true).href,
    );
    expect(inputValue(page.text, 'scope')).toBe('staff.list tasks.read offline_access');
    expect(page.text).not.toContain('can no longer');
  });

  it('is not what a remembered consent does: an app asking for less narrows nothing', async () => {
    const app = await newApp();
    const old = await tokensFor(app, 'staff.list tasks.read offline_access');
    const verifier = randomBytes(32).toString('base64url');
    const back = await browser.get(authorizeUrl(app, 'staff.list', verifier, false).href);
    expect(back.status).toBe(302);
    const narrower = await exchange(app, {
      code: new URL(back.location!).searchParams.get('code')!,
      verifier,
    });
    expect(narrower).toMatchObject({ status: 200, body: { scope: 'staff.list' } });
    expect(await grantScopes(app)).toEqual(['staff.list', 'tasks.read', 'offline_access']);
    expect(await readTask(old.access)).toEqual({ status: 404, code: 'not_found' });
    expect(await refresh(app, old.refresh)).toMatchObject({ status: 200 });
  });
});
