import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { codeExchange, type Harness, password, type RegisteredApp, startHarness } from './harness.ts';

// The whole authorization code + PKCE flow as a person meets it: a real Chromium (from npm, unpacked
// by the global set-up) on the real pages, and an app's callback that is a real local server.
let h: Harness;
let browser: Browser;
let page: Page;
let callback: Server;
let callbackBase: string;
let app: RegisteredApp;
let other: RegisteredApp;

beforeAll(async () => {
  h = await startHarness();
  const port = await freePort();
  callbackBase = `http://localhost:${port}`;
  callback = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>Back at the app.</p>');
  }).listen(port, '127.0.0.1');
  await once(callback, 'listening');
  const scopes = ['tasks.read', 'staff.list', 'offline_access'];
  app = await h.registerApp({ name: 'Acme <Sync>', scopes, redirectUris: [`${callbackBase}/callback`] });
  other = await h.registerApp({ name: 'Other App', scopes, redirectUris: [`${callbackBase}/other`] });
  // These pages come from a local server: the browser needs the machine's network.
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
  page = await (await browser.newContext({ javaScriptEnabled: true })).newPage();
});
afterAll(async () => {
  await browser?.close();
  callback?.close();
  await h.close();
});

type Pkce = { verifier: string; state: string; url: string };

function authorizeUrl(target: RegisteredApp, scope = 'tasks.read staff.list offline_access'): Pkce {
  const verifier = randomBytes(32).toString('base64url');
  const state = randomBytes(8).toString('hex');
  return { verifier, state, url: h.authorizeUrl(target, scope, verifier, { state }).toString() };
}

async function exchange(target: RegisteredApp, code: string, verifier: string) {
  const res = await h.postToken(codeExchange({ code, redirectUri: target.redirectUri, verifier }), {
    authorization: `Basic ${Buffer.from(`${target.clientId}:${target.clientSecret}`).toString('base64')}`,
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string };
}

const staffStatus = async (token: string) =>
  (await fetch(`${h.base}/api/pub/v1/staff`, { headers: { authorization: `Bearer ${token}` } })).status;

let firstToken: string;

describe('the authorization code flow in Chromium', () => {
  it('signs in (wrong password first), shows the consent in plain words, and issues a code for the chosen workspace', async () => {
    const flow = authorizeUrl(app);
    await page.goto(flow.url);
    expect(await page.title()).toBe('Sign in');
    await page.fill('#email', h.email);
    await page.fill('#password', 'not the password');
    await page.click('button[type=submit]');
    await expect(page.getByRole('alert').textContent()).resolves.toContain('do not match');
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForURL(/\/oauth\/authorize\?/);
    // The app's name is shown as text, never as markup.
    await expect(page.locator('h1').textContent()).resolves.toBe('Allow Acme <Sync> to act for you?');
    const scopes = await page.locator('li').allTextContents();
    expect(scopes.join('\n')).toContain('Read a task');
    expect(scopes.join('\n')).toContain('List staff');
    expect(scopes.join('\n')).toContain('Keep access while you are away');
    await page.getByLabel('Second workspace').check();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${callbackBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe(flow.state);
    expect(back.searchParams.get('iss')).toBe(h.issuer);
    const tokens = await exchange(app, back.searchParams.get('code')!, flow.verifier);
    firstToken = tokens.access_token;
    expect(await staffStatus(firstToken)).toBe(200);
    const grant = await h.t.deps.pool.one(sql.type(z.object({ workspace_id: z.string() }))`
      select g.workspace_id from oauth_grants g join oauth_apps a on a.id = g.app_id
      where a.client_id = ${app.clientId} and g.revoked_at is null
    `);
    expect(grant.workspace_id).toBe(h.second.workspaceId);
    // The old scrypt hash was replaced at sign-in.
    const hash = await h.t.deps.pool.oneFirst(sql.type(z.object({ password_hash: z.string() }))`
      select password_hash from members where id = ${h.second.memberId}
    `);
    expect(hash).toMatch(/^\$argon2id\$/);
  });

  it('refusal sends access_denied with the state', async () => {
    const flow = authorizeUrl(other);
    await page.goto(flow.url);
    await page.getByRole('button', { name: 'Refuse' }).click();
    await page.waitForURL(`${callbackBase}/other?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('error')).toBe('access_denied');
    expect(back.searchParams.get('state')).toBe(flow.state);
    expect(back.searchParams.get('code')).toBeNull();
  });

  it('remembers a consent for the same app, workspace and scopes', async () => {
    const flow = authorizeUrl(app);
    await page.goto(flow.url);
    await page.waitForURL(`${callbackBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('code')).toMatch(/^svc_ac_/);
    await exchange(app, back.searchParams.get('code')!, flow.verifier);
  });

  it('cuts the app off from the account page: tokens stop and consent is asked again', async () => {
    await page.goto(`${h.base}/account`);
    const section = page.locator('section', { hasText: 'Second workspace' });
    await expect(section.textContent()).resolves.toContain('Acme <Sync>');
    await expect(section.textContent()).resolves.toContain('List staff');
    await expect(section.innerText()).resolves.toMatch(/last used\s+\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC/);
    // Through its confirmation page (issue 23); the account page then says what happened.
    await section.getByRole('link', { name: 'Cut off Acme <Sync>' }).click();
    await page.getByRole('button', { name: 'Cut off Acme <Sync>' }).click();
    await page.waitForURL(`${h.base}/account?done=app-cut-off`);
    await expect(page.getByRole('status').textContent()).resolves.toContain('The app was cut off');
    await expect(page.locator('body').textContent()).resolves.toContain('No app is connected.');
    expect(await staffStatus(firstToken)).toBe(401);
    await page.goto(authorizeUrl(app).url);
    await expect(page.locator('h1').textContent()).resolves.toBe('Allow Acme <Sync> to act for you?');
  });

  it('signs out', async () => {
    await page.goto(`${h.base}/account`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${h.base}/account/sign-in`);
    await page.goto(`${h.base}/account`);
    expect(await page.title()).toBe('Sign in');
  });
});
