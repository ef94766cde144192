import { createHash } from 'node:crypto';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { findMember } from '../../../shared/db/queries/members.ts';
import { insertOauthApp } from '../../../shared/db/queries/oauthApps.ts';
import { newId, randomBase62, sha256 } from '../../../shared/primitives/ids.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../../helpers/otlpReceiver.ts';
import { secretSamples } from '../../helpers/secretSamples.ts';
import { callerTraceparent, startTracedPlatform, type TracedPlatform } from '../../helpers/tracedPlatform.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { waitUntil } from '../api/tasks.helpers.ts';
import { authorize, codeExchange, FormClient, password, signInWith } from '../oauth/harness.ts';

let t: TestContext;
let tenant: Tenant;
let receiver: OtlpReceiver;
let mock: OpenAiMock;
let judoscale: LoopbackServer;
let hooks: LoopbackServer;
let platform: TracedPlatform;

// Configured secrets, each long enough for the logger's known-value masking and random per run.
const hirefireToken = randomBase62(32);
const judoscaleToken = `judo_${randomBase62(32)}`;
const metricsToken = randomBase62(32);
// A webhook receiver's URL with a secret in its path and its query, as customers register them.
const hookPathSecret = `hookpath${randomBase62(24)}`;
const hookQuerySecret = `hookquery${randomBase62(24)}`;
/** Every secret the scenario handed out or used; found nowhere in anything exported. */
const secrets: { name: string; value: string }[] = [];
let judoscaleReports = 0;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  receiver = await startOtlpReceiver();
  mock = await startOpenAiMock();
  judoscale = await listenOnLoopback((req, res) => {
    if (req.url === `/api/${judoscaleToken}/v3/reports`) judoscaleReports += 1;
    req.resume().on('end', () => res.writeHead(204).end());
  });
  hooks = await listenOnLoopback((req, res) => req.resume().on('end', () => res.writeHead(204).end()));
  platform = await startTracedPlatform(
    t,
    receiver,
    {
      ...openaiEnv(mock),
      HIREFIRE_TOKEN: hirefireToken,
      JUDOSCALE_URL: `${judoscale.origin}/api/${judoscaleToken}`,
      METRICS_TOKEN: metricsToken,
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
    { worker: true },
  );
  const webhook = await addWebhookEndpoint(
    t.deps.pool,
    tenant,
    `${hooks.origin}/hooks/${hookPathSecret}?token=${hookQuerySecret}`,
    ['task.message.created'],
  );
  secrets.push(
    { name: 'HIREFIRE_TOKEN', value: hirefireToken },
    { name: 'the Judoscale token', value: judoscaleToken },
    { name: 'METRICS_TOKEN', value: metricsToken },
    { name: 'OPENAI_API_KEY', value: mock.apiKey },
    { name: 'the test key', value: tenant.testKey },
    { name: 'the live key', value: tenant.liveKey },
    { name: 'the webhook signing secret', value: webhook.secret },
    { name: 'the webhook URL path', value: hookPathSecret },
    { name: 'the webhook URL query', value: hookQuerySecret },
    { name: 'the member password', value: password },
  );
});
afterAll(async () => {
  await platform?.stop();
  await hooks?.close();
  await judoscale?.close();
  await mock?.close();
  await receiver.close();
  await t.close();
});

const everythingExported = () => receiver.bodies().join('\n');

/**
 * Waits for the span of a GET /me made now: whatever ended before it has been exported by then. It
 * is told by the trace context it was sent with (continued or linked, however the api treats a
 * caller's traceparent).
 */
async function flushed(): Promise<ReceivedSpan[]> {
  const marker = callerTraceparent();
  const res = await fetch(`${platform.base}/api/pub/v1/me`, {
    headers: { authorization: `Bearer ${tenant.testKey}`, traceparent: marker.traceparent },
  });
  expect(res.status).toBe(200);
  return receiver.waitFor((all) =>
    all.some((s) => s.traceId === marker.traceId || s.links.some((l) => l.traceId === marker.traceId)),
  );
}

/** Fails naming the secret found in anything exported (not printing every export). */
function expectNotExported(...found: { name: string; value: string }[]): void {
  const exported = everythingExported();
  for (const { name, value } of found) {
    expect({ name, exported: exported.includes(value) }).toEqual({ name, exported: false });
  }
}

const apiPost = (path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${platform.base}/api/pub/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('spans exported with tracing on', () => {
  it('name HireFire’s endpoint by its route and never carry the token in its path', async () => {
    expect((await fetch(`${platform.base}/hirefire/${hirefireToken}/info`)).status).toBe(200);
    const byHeader = await fetch(`${platform.base}/hirefire`, {
      headers: { 'hirefire-token': hirefireToken },
    });
    expect(byHeader.status).toBe(200);
    // The server spans themselves are where a path's token would be.
    await receiver.waitFor((all) => all.filter((s) => s.name.includes('/hirefire')).length >= 2);
    expectNotExported({ name: 'HIREFIRE_TOKEN', value: hirefireToken });
    const spans = receiver.spans();
    expect(spans.find((s) => s.name === 'GET /hirefire/:token/info')?.attributes['http.route']).toBe(
      '/hirefire/:token/info',
    );
    expect(spans.some((s) => s.name === 'GET /hirefire')).toBe(true);
  });

  it('show a webhook delivery’s receiver host, never the secret path or query of its URL', async () => {
    const res = await apiPost('/tasks', tenant.liveKey, { input: 'Reply and tell the webhook.' });
    expect(res.status).toBe(202);
    const spans = await receiver.waitFor((all) => all.some((s) => s.name === 'webhook deliver'));
    const delivery = spans.find((s) => s.name === 'webhook deliver')!;
    expect(delivery.attributes['server.address']).toBe(new URL(hooks.origin).host);
    // Whatever a delivery's attempt exported ended before its delivery span did.
    expectNotExported(
      { name: 'the webhook URL path', value: hookPathSecret },
      { name: 'the webhook URL query', value: hookQuerySecret },
    );
  });

  it('carry no configured secret or credential from a scenario touching every kind of call', async () => {
    // The console: sign in, read a page.
    const browser = new FormClient(platform.base);
    expect((await signInWith(browser, (await memberEmail())!)).status).toBe(303);
    expect((await browser.get(`/console/${tenant.memberId}/keys`)).status).toBe(200);
    secrets.push({ name: 'the session cookie', value: browser.cookie('svc_session')! });

    // OAuth: consent, the code exchange, a refresh, and an API call with the access token.
    const app = await registerApp();
    const verifier = randomBase62(48);
    const redirect = await authorize(browser, authorizeUrl(app, verifier));
    const code = redirect.searchParams.get('code')!;
    const tokens = (await (
      await postToken(
        codeExchange({
          code,
          redirectUri: app.redirectUri,
          verifier,
          clientId: app.clientId,
          clientSecret: app.clientSecret,
        }),
      )
    ).json()) as { access_token: string; refresh_token: string };
    const staff = await fetch(`${platform.base}/api/pub/v1/staff`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(staff.status).toBe(200);
    const refreshed = await postToken({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: app.clientId,
      client_secret: app.clientSecret,
    });
    expect(refreshed.status).toBe(200);
    secrets.push(
      { name: 'the OAuth client secret', value: app.clientSecret },
      { name: 'the authorization code', value: code },
      { name: 'the access token', value: tokens.access_token },
      { name: 'the refresh token', value: tokens.refresh_token },
    );

    // MCP: a handshake and a tool call with a key.
    const mcp = await apiPost(
      '/mcp',
      tenant.liveKey,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_projects', arguments: {} } },
      { accept: 'application/json, text/event-stream' },
    );
    expect(mcp.status).toBe(200);

    // The API: a provider call with a prompt full of credentials, a refused key, a key in a query.
    const prompt = secretSamples()
      .map((s) => s.text)
      .join(' ');
    expect((await apiPost('/text', tenant.liveKey, { prompt })).status).toBe(201);
    const stranger = `svc_sk_live_${randomBase62(40)}`;
    expect((await apiPost('/text', stranger, { prompt: 'refused' })).status).toBe(401);
    const inQuery = await fetch(`${platform.base}/api/pub/v1/me?api_key=${tenant.liveKey}`, {
      headers: { authorization: `Bearer ${tenant.testKey}` },
    });
    expect(inQuery.status).toBeLessThan(500);
    secrets.push(
      { name: 'a refused key', value: stranger },
      ...secretSamples().map((s) => ({ name: `the prompt's ${s.name}`, value: s.secret })),
    );

    // The operator's endpoints.
    const metrics = await fetch(`${platform.base}/metrics`, {
      headers: { authorization: `Bearer ${metricsToken}` },
    });
    expect(metrics.status).toBe(200);

    // Every span the scenario caused has ended before the marker's: the text job's provider call,
    // and both deliveries of the task above (its message and the reply's).
    await receiver.waitFor(
      (all) =>
        all.filter((s) => s.name === 'webhook deliver').length >= 2 &&
        all.some((s) => s.name === 'job text__generate'),
    );
    await flushed();
    expectNotExported(...secrets);
    const exported = everythingExported();
    for (const pattern of credentialPatterns) {
      expect({ pattern: String(pattern), match: pattern.exec(exported)?.[0] }).toEqual({
        pattern: String(pattern),
        match: undefined,
      });
    }
  });

  // Last: the reporter's second report (10 s apart) comes while the tests above run.
  it('leave out the Judoscale report’s URL, whose path holds the app’s token', async () => {
    // One report at a time: when the second arrives, the first has ended, span and all.
    await waitUntil(async () => (judoscaleReports >= 2 ? true : undefined), 30_000, 200);
    await flushed();
    expectNotExported({ name: 'the Judoscale token', value: judoscaleToken });
  });
});

/** Credentials as the logger knows them, unmasked (a masked one reads `svc_sk_[redacted]`). */
const credentialPatterns = [
  /svc_(?:sk|at|rt|ac|ocs)_[A-Za-z0-9]/,
  /whsec_[A-Za-z0-9+/]/,
  /Bearer\s+[A-Za-z0-9]/i,
  /\bsk-[A-Za-z0-9_-]{8}/,
  /X-Amz-(?:Signature|Credential|Security-Token)=[^[]/i,
  /password["']?\s*[=:]\s*["']?(?!\[redacted)[^\s"',;&]/i,
];

async function memberEmail(): Promise<string | undefined> {
  return (await findMember(t.deps.pool, tenant.memberId))?.email;
}

type App = { clientId: string; clientSecret: string; redirectUri: string };

async function registerApp(): Promise<App> {
  const app = {
    clientId: `svc_oc_${randomBase62(24)}`,
    clientSecret: `svc_ocs_${randomBase62(40)}`,
    redirectUri: 'http://localhost:8123/callback',
  };
  await insertOauthApp(t.deps.pool, {
    id: newId('app'),
    projectId: tenant.projectId,
    workspaceId: tenant.workspaceId,
    name: 'Tracing scan',
    clientId: app.clientId,
    clientSecretHash: sha256(app.clientSecret),
    type: 'server',
    redirectUris: [app.redirectUri],
    scopes: ['staff.list', 'offline_access'],
    verified: true,
  });
  return app;
}

function authorizeUrl(app: App, verifier: string): URL {
  const url = new URL(`${platform.base}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    scope: 'staff.list offline_access',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return url;
}

const postToken = (fields: Record<string, string>) =>
  fetch(`${platform.base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
