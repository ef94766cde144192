import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as oauth from 'oauth4webapi';
import { z } from 'zod';

import { deleteExpiredOauthRows } from '../../../shared/db/queries/oauthTokens.ts';
import { sql } from '../../../shared/db/sql.ts';
import { authorize, type FormClient, type Harness, type RegisteredApp, startHarness } from './harness.ts';

let h: Harness;
let now = Date.now();
const graceMs = 2_000;
const insecure = { [oauth.allowInsecureRequests]: true };
let as: oauth.AuthorizationServer;
let browser: FormClient;

beforeAll(async () => {
  h = await startHarness({ clock: () => now, refreshGraceMs: graceMs });
  const response = await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...insecure });
  as = await oauth.processDiscoveryResponse(new URL(h.issuer), response);
  browser = await h.signIn();
});
afterAll(() => h.close());

type Flow = {
  app: RegisteredApp;
  client: oauth.Client;
  auth: oauth.ClientAuth;
  verifier: string;
  params: URLSearchParams;
};

/** Walks the authorization endpoint with PKCE, as oauth4webapi builds and checks it. */
async function codeFor(app: RegisteredApp, scope: string, member?: string): Promise<Flow> {
  const client: oauth.Client = { client_id: app.clientId };
  const auth = app.clientSecret ? oauth.ClientSecretBasic(app.clientSecret) : oauth.None();
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.search = new URLSearchParams({
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    response_type: 'code',
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  }).toString();
  const back = await authorize(browser, url, { member });
  const params = oauth.validateAuthResponse(as, client, back, state);
  return { app, client, auth, verifier, params };
}

async function exchange(flow: Flow) {
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    flow.client,
    flow.auth,
    flow.params,
    flow.app.redirectUri,
    flow.verifier,
    insecure,
  );
  return oauth.processAuthorizationCodeResponse(as, flow.client, response);
}

/** The code exchange of `flow` as posted by `client` (its app unless another is named), with its secret. */
const codeGrant = (flow: Flow, client: RegisteredApp = flow.app) => ({
  grant_type: 'authorization_code',
  code: flow.params.get('code')!,
  redirect_uri: flow.app.redirectUri,
  code_verifier: flow.verifier,
  client_id: client.clientId,
  client_secret: client.clientSecret!,
});

/** A refresh of `token` as posted by the server app, with its secret. */
const refreshBody = (app: RegisteredApp, token: string) => ({
  grant_type: 'refresh_token',
  refresh_token: token,
  client_id: app.clientId,
  client_secret: app.clientSecret!,
});

// oauth4webapi's refresh-grant and revocation requests, from the flow's client.
const refreshGrant = (flow: Flow, token: string) =>
  oauth.refreshTokenGrantRequest(as, flow.client, flow.auth, token, insecure);
const revocation = (flow: Flow, token: string) =>
  oauth.revocationRequest(as, flow.client, flow.auth, token, insecure);

const me = (token: string) =>
  fetch(`${h.base}/api/pub/v1/me`, { headers: { authorization: `Bearer ${token}` } });
const errorCode = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

async function postToken(body: Record<string, string>, headers: Record<string, string> = {}) {
  const res = await h.postToken(body, headers);
  return {
    status: res.status,
    headers: res.headers,
    body: (await res.json().catch(() => null)) as Record<string, unknown>,
  };
}

describe('discovery', () => {
  it('serves RFC 8414 metadata at {oauth_url}/.well-known/oauth-authorization-server', async () => {
    const res = await fetch(`${h.issuer}/.well-known/oauth-authorization-server`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      issuer: h.issuer,
      authorization_endpoint: `${h.base}/oauth/authorize`,
      token_endpoint: `${h.issuer}/token`,
      revocation_endpoint: `${h.issuer}/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    });
    expect(body.scopes_supported).toEqual(
      expect.arrayContaining(['tasks.create', 'offline_access', 'openid']),
    );
    expect(as.issuer).toBe(h.issuer);
  });
});

describe('authorization code + PKCE with a standards client', () => {
  it('exchanges, calls the API, refreshes (rotating), and revokes', async () => {
    const app = await h.registerApp();
    const flow = await codeFor(app, 'tasks.read staff.list offline_access');
    expect(flow.params.get('code')).toMatch(/^svc_ac_/);
    const tokens = await exchange(flow);
    expect(tokens).toMatchObject({
      token_type: 'bearer',
      expires_in: 3600,
      scope: 'tasks.read staff.list offline_access',
    });
    expect(tokens.access_token).toMatch(/^svc_at_[0-9A-Za-z]{43}$/);
    expect(tokens.refresh_token).toMatch(/^svc_rt_[0-9A-Za-z]{43}$/);
    expect((await me(tokens.access_token)).status).toBe(200);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      flow.client,
      await refreshGrant(flow, tokens.refresh_token!),
    );
    expect(refreshed.access_token).not.toBe(tokens.access_token);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    // The old pair stops working once the new one is issued.
    const old = await me(tokens.access_token);
    expect(old.status).toBe(401);
    expect(await errorCode(old)).toBe('api_key_revoked');
    expect((await me(refreshed.access_token)).status).toBe(200);

    const revoked = await revocation(flow, refreshed.refresh_token!);
    await oauth.processRevocationResponse(revoked);
    expect((await me(refreshed.access_token)).status).toBe(401);
    const again = await refreshGrant(flow, refreshed.refresh_token!);
    await expect(oauth.processRefreshTokenResponse(as, flow.client, again)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it('serves public clients by client_id alone, with JSON bodies too, and no refresh token without offline_access', async () => {
    const app = await h.registerApp({ type: 'public', redirectUris: ['com.example.acme:/oauth'] });
    const flow = await codeFor(app, 'tasks.read');
    const res = await fetch(`${h.issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code: flow.params.get('code'),
        redirect_uri: app.redirectUri,
        code_verifier: flow.verifier,
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.refresh_token).toBeUndefined();
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'tasks.read' });
  });

  it('accepts client_secret in the body and answers RFC 6749 §5.2 errors with no-store', async () => {
    const app = await h.registerApp();
    const flow = await codeFor(app, 'tasks.read');
    const base = {
      grant_type: 'authorization_code',
      code: flow.params.get('code')!,
      redirect_uri: app.redirectUri,
      code_verifier: flow.verifier,
      client_id: app.clientId,
    };
    const wrongSecret = await postToken({ ...base, client_secret: 'svc_ocs_wrong' });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toEqual({ error: 'invalid_client', error_description: expect.any(String) });
    expect(wrongSecret.headers.get('cache-control')).toBe('no-store');
    const basicWrong = await postToken(base, {
      authorization: `Basic ${Buffer.from(`${app.clientId}:nope`).toString('base64')}`,
    });
    expect(basicWrong.status).toBe(401);
    expect(basicWrong.headers.get('www-authenticate')).toMatch(/^Basic/);
    const badVerifier = await postToken({
      ...base,
      client_secret: app.clientSecret!,
      code_verifier: 'x'.repeat(43),
    });
    expect(badVerifier.body).toMatchObject({ error: 'invalid_grant' });
    const badRedirect = await postToken({
      ...base,
      client_secret: app.clientSecret!,
      redirect_uri: 'http://localhost:8123/other',
    });
    expect(badRedirect.body).toMatchObject({ error: 'invalid_grant' });
    const implicit = await postToken({ grant_type: 'password', username: 'a', password: 'b' });
    expect(implicit).toMatchObject({ status: 400, body: { error: 'unsupported_grant_type' } });
    const missing = await postToken({
      grant_type: 'authorization_code',
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    expect(missing).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
    // The right verifier still works: failed attempts did not use the code up.
    const ok = await postToken({ ...base, client_secret: app.clientSecret! });
    expect(ok.status).toBe(200);
  });

  it('refuses another client the code', async () => {
    const app = await h.registerApp();
    const other = await h.registerApp();
    const flow = await codeFor(app, 'tasks.read');
    const stolen = await postToken(codeGrant(flow, other));
    expect(stolen.body).toMatchObject({ error: 'invalid_grant' });
  });
});

describe('replay and rotation', () => {
  it('a replayed code is refused and revokes every token it issued', async () => {
    const app = await h.registerApp();
    const flow = await codeFor(app, 'tasks.read offline_access');
    const tokens = await exchange(flow);
    expect((await me(tokens.access_token)).status).toBe(200);
    const replay = await postToken(codeGrant(flow));
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await me(tokens.access_token)).status).toBe(401);
    const refresh = await postToken(refreshBody(app, tokens.refresh_token!));
    expect(refresh.body).toMatchObject({ error: 'invalid_grant' });
  });

  it('20 concurrent refreshes of one token all get the same new pair, which works', async () => {
    const app = await h.registerApp();
    const tokens = await exchange(await codeFor(app, 'tasks.read offline_access'));
    const results = await Promise.all(
      Array.from({ length: 20 }, () => postToken(refreshBody(app, tokens.refresh_token!))),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const pairs = new Set(
      results.map((r) => `${String(r.body.access_token)} ${String(r.body.refresh_token)}`),
    );
    expect(pairs.size).toBe(1);
    const [pair] = results;
    expect(pair!.body.refresh_token).not.toBe(tokens.refresh_token);
    // The person stays signed in: the new pair works, and refreshes on.
    expect((await me(pair!.body.access_token as string)).status).toBe(200);
    const next = await postToken(refreshBody(app, pair!.body.refresh_token as string));
    expect(next.status).toBe(200);
  });

  it('a rotated refresh token replayed after the grace window revokes the whole grant', async () => {
    const app = await h.registerApp();
    const tokens = await exchange(await codeFor(app, 'tasks.read offline_access'));
    const refresh = (token: string) => postToken(refreshBody(app, token));
    const first = await refresh(tokens.refresh_token!);
    expect(first.status).toBe(200);
    now += graceMs + 1;
    const replay = await refresh(tokens.refresh_token!);
    expect(replay).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    expect((await me(first.body.access_token as string)).status).toBe(401);
    expect((await refresh(first.body.refresh_token as string)).body).toMatchObject({
      error: 'invalid_grant',
    });
    const grant = await h.t.deps.pool.one(sql.type(z.object({ revoked: z.boolean() }))`
      select bool_and(g.revoked_at is not null) as revoked from oauth_grants g join oauth_apps a on a.id = g.app_id
      where a.client_id = ${app.clientId}
    `);
    expect(grant.revoked).toBe(true);
  });
});

describe('expiry on the injected clock', () => {
  it('access tokens last one hour, codes ten minutes, refresh tokens 30 days', async () => {
    const app = await h.registerApp();
    const tokens = await exchange(await codeFor(app, 'tasks.read offline_access'));
    now += 60 * 60_000 - 5_000;
    expect((await me(tokens.access_token)).status).toBe(200);
    now += 10_000;
    const expired = await me(tokens.access_token);
    expect(expired.status).toBe(401);
    expect(await errorCode(expired)).toBe('api_key_expired');

    const late = await codeFor(app, 'tasks.read');
    now += 10 * 60_000 + 1;
    const lateExchange = await postToken(codeGrant(late));
    expect(lateExchange.body).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('expired'),
    });

    now += 30 * 24 * 60 * 60_000;
    const stale = await postToken(refreshBody(app, tokens.refresh_token!));
    expect(stale.body).toMatchObject({
      error: 'invalid_grant',
      error_description: expect.stringContaining('expired'),
    });
  });
});

describe('retention', () => {
  it('deletes codes and tokens past expiry, withdrawn consents and expired sessions', async () => {
    await h.t.deps.pool.query(sql.typeAlias('void')`
      update oauth_tokens set expires_at = now() - interval '2 days'
      where id = (select id from oauth_tokens order by created_at limit 1)
    `);
    const count = () =>
      h.t.deps.pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`select count(*)::int as n from oauth_tokens`,
      );
    const before = await count();
    await deleteExpiredOauthRows(h.t.deps.pool);
    expect(await count()).toBeLessThan(before);
  });
});
