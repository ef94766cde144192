import { mkdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';

import { stylesheetHref } from '../../../api/web/assets.ts';
import { insertEvent } from '../../../shared/db/queries/events.ts';
import { insertFile } from '../../../shared/db/queries/files.ts';
import { upsertGrant } from '../../../shared/db/queries/oauthGrants.ts';
import { insertTaskMessage, insertTaskMessageFiles } from '../../../shared/db/queries/taskMessages.ts';
import {
  insertDeliveryAttempt,
  insertWebhookDeliveries,
  updateDelivery,
} from '../../../shared/db/queries/webhooks.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { createWebhookEndpoint } from '../../../shared/webhooks/endpoints.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { axeViolations as violationsOn } from '../../helpers/axe.ts';
import { type Harness, password, startHarness } from '../oauth/harness.ts';
import {
  backgroundLuminance,
  boxOf,
  brokenTokens,
  computedStyle,
  overflowingLabels,
} from './pageMeasures.ts';

// Every page a person meets, in the bundled Chromium at a desktop and a phone size, light and dark:
// axe-core finds no violation of any impact (in dark mode, no colour-contrast one), nothing scrolls
// sideways on the phone, no word or id is broken across lines, body text and buttons render in the
// bundled sans font, and a screenshot of each lands in test/artifacts/pages/.
let h: Harness;
let browser: Browser;
let page: Page;
const artifacts = 'test/artifacts/pages';
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };
const sansFont = 'DejaVu Sans';

/** The font Chromium actually drew the first element matching `selector` with (not the CSS list). */
async function renderedFont(selector: string): Promise<string | undefined> {
  const cdp = await page.context().newCDPSession(page);
  try {
    await cdp.send('DOM.enable');
    await cdp.send('CSS.enable');
    const { root } = await cdp.send('DOM.getDocument');
    const { nodeId } = await cdp.send('DOM.querySelector', { nodeId: root.nodeId, selector });
    if (!nodeId) return undefined;
    const { fonts } = await cdp.send('CSS.getPlatformFontsForNode', { nodeId });
    return fonts.toSorted((a, b) => b.glyphCount - a.glyphCount)[0]?.familyName;
  } finally {
    await cdp.detach();
  }
}

/** axe-core's violations of any impact on the page as it is now ('rule target, …'), or only `rules`. */
async function axeViolations(name: string, rules?: string[]): Promise<string[]> {
  const violations = await violationsOn(page, rules ? { runOnly: { type: 'rule', values: rules } } : {});
  return violations.map(
    (v) => `${name}: ${v.id} (${v.impact}) ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`,
  );
}

/**
 * In dark mode at the current size: a dark background; at the desktop size also axe's
 * colour-contrast check and a screenshot (the colours are the same at both sizes).
 */
async function checkDark(name: string, size: 'desktop' | 'phone'): Promise<void> {
  await page.emulateMedia({ colorScheme: 'dark' });
  try {
    expect({ name, dark: (await backgroundLuminance(page)) < 0.05 }).toEqual({ name, dark: true });
    if (size === 'desktop') {
      expect(await axeViolations(`${name} (dark)`, ['color-contrast'])).toEqual([]);
      await page.screenshot({ path: `${artifacts}/${name}-${size}-dark.png`, fullPage: true });
    }
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
}

async function expectNoSidewaysScroll(name: string): Promise<void> {
  const widths = (await page.evaluate(
    '[document.documentElement.scrollWidth, window.innerWidth]',
  )) as number[];
  expect({ name, scrollWidth: widths[0]! <= widths[1]! ? 'fits' : widths[0] }).toEqual({
    name,
    scrollWidth: 'fits',
  });
}

/** Checks the page now loaded at both sizes, light and dark, and saves its screenshots. */
async function checkPage(name: string): Promise<void> {
  await page.setViewportSize(desktop);
  await page.screenshot({ path: `${artifacts}/${name}-desktop.png`, fullPage: true });
  expect(await axeViolations(`${name} (desktop)`)).toEqual([]);
  expect({ name, broken: await brokenTokens(page) }).toEqual({ name, broken: [] });
  // A heading that quotes a URL or an id sets it in monospace on purpose.
  if ((await page.locator('h1 code').count()) === 0) {
    expect({ name, h1: await renderedFont('h1') }).toEqual({ name, h1: sansFont });
  }
  expect({ name, brand: await renderedFont('.brand') }).toEqual({ name, brand: sansFont });
  if ((await page.locator('button').count()) > 0) {
    expect({ name, button: await renderedFont('button') }).toEqual({ name, button: sansFont });
  }
  await checkDark(name, 'desktop');
  await expectNoSidewaysScroll(`${name} (desktop)`);
  await page.setViewportSize(phone);
  await page.screenshot({ path: `${artifacts}/${name}-phone.png`, fullPage: true });
  await expectNoSidewaysScroll(`${name} (phone)`);
  expect(await axeViolations(`${name} (phone)`)).toEqual([]);
  expect({ name, broken: await brokenTokens(page) }).toEqual({ name, broken: [] });
  expect({ name, overflowing: await overflowingLabels(page) }).toEqual({ name, overflowing: [] });
  await checkDark(name, 'phone');
}

/**
 * Two deliveries to the endpoint with their logs, written directly (no worker runs here): one
 * failed with the receiver's answer, one that succeeded when resent.
 */
async function insertDeliveries(endpointId: string): Promise<void> {
  await h.t.deps.pool.transaction(async (tx) => {
    for (const [n, status] of (['failed', 'succeeded'] as const).entries()) {
      const eventId = newId('evt');
      const deliveryId = newId('whd');
      await insertEvent(tx, eventId, {
        workspaceId: h.tenant.workspaceId,
        projectId: h.tenant.projectId,
        type: 'job.failed',
        data: { job: { id: `job_visual_${n}` } },
      });
      await insertWebhookDeliveries(tx, [
        { id: deliveryId, workspaceId: h.tenant.workspaceId, endpointId, eventId },
      ]);
      const attempts = status === 'failed' ? 1 : 2;
      for (let attempt = 1; attempt <= attempts; attempt += 1) {
        const ok = attempt === 2;
        await insertDeliveryAttempt(tx, {
          deliveryId,
          attempt,
          statusCode: ok ? 204 : 503,
          error: ok ? null : 'HTTP 503',
          durationMs: 42,
          responseExcerpt: ok ? null : 'Service temporarily unavailable, try again later',
          reason: ok ? `resent by ${h.email} at 2026-11-29T08:30:00.000Z` : null,
        });
      }
      await updateDelivery(tx, {
        id: deliveryId,
        status,
        attempts,
        lastStatusCode: status === 'failed' ? 503 : 204,
        lastError: status === 'failed' ? 'HTTP 503' : null,
        nextAttemptAt: null,
      });
    }
  });
}

/**
 * The request log (loaded, any time): a failed call's row and status badge stand apart from a
 * successful one's, in words and colour; the quick ranges are links that filter, keeping the rest.
 */
async function checkRequestLog(base: string): Promise<void> {
  await page.setViewportSize(desktop);
  const failed = page.locator('tr.call-4xx .http-status.http-4xx');
  await expect(failed.count()).resolves.toBe(1);
  await expect(failed.textContent()).resolves.toBe('404 Not Found');
  await expect(page.locator('tr:not([class*=call-]) .http-status.http-ok').textContent()).resolves.toBe(
    '200 OK',
  );
  expect(await computedStyle(page, '.http-4xx', 'background-color')).not.toBe(
    await computedStyle(page, '.http-ok', 'background-color'),
  );
  expect(await computedStyle(page, 'tr.call-4xx', 'border-left-width')).toBe('4px');
  // A card on a phone keeps the caller's id under its name, in the value column.
  await page.setViewportSize(phone);
  const caller = await boxOf(page, 'td[data-label="Key or app"]');
  const callerId = await boxOf(page, 'td[data-label="Key or app"] code');
  expect(callerId.left).toBeGreaterThan(caller.left + 100);
  await page.setViewportSize(desktop);
  await page.getByRole('link', { name: 'Last hour' }).click();
  await page.waitForURL(/range=1h/);
  await expect(page.locator('tbody tr').count()).resolves.toBe(1);
  await expect(page.locator('tbody .http-status').textContent()).resolves.toBe('404 Not Found');
  await expect(page.locator('.ranges [aria-current]').textContent()).resolves.toBe('Last hour');
  await checkPage('logs-last-hour');
  await page.goto(`${h.base}${base}/logs?status=2xx`);
  await page.getByRole('link', { name: 'Last week' }).click();
  await page.waitForURL(/status=2xx&range=7d/);
  await expect(page.locator('tbody .http-status').allTextContents()).resolves.toEqual(['200 OK']);
  await page.getByRole('link', { name: 'Last day' }).click();
  await page.waitForURL(/status=2xx&range=1d/);
  await expect(page.locator('tbody tr').count()).resolves.toBe(0);
}

/**
 * On a phone the usage chart opens on its latest days: the bar of today's spend lies inside the
 * visible part of the chart's scrolling box (no script scrolls it there).
 */
async function expectLatestBarInView(): Promise<void> {
  await page.setViewportSize(phone);
  const today = new Date().toISOString().slice(0, 10);
  const view = await boxOf(page, '.chart-wrap');
  const bar = await boxOf(page, `svg.chart a[aria-label^="${today}"] rect`);
  expect({ left: bar.left >= view.left, right: bar.right <= view.right }).toEqual({
    left: true,
    right: true,
  });
  await page.setViewportSize(desktop);
}

/** A file (in object storage too) attached to a new user message of the task. */
async function attachFile(taskId: string, filename: string): Promise<{ id: string; text: string }> {
  const { pool, objectStore } = h.t.deps;
  const id = newId('file');
  const text = 'What the launch video must show.';
  const storageKey = `visual/${id}`;
  await objectStore.put(storageKey, Buffer.from(text), text.length, 'application/pdf');
  await pool.transaction(async (tx) => {
    const workspaceId = h.tenant.workspaceId;
    await insertFile(tx, {
      id,
      workspaceId,
      memberId: h.tenant.memberId,
      filename,
      mimeType: 'application/pdf',
      sizeBytes: text.length,
      kind: 'file',
      storageKey,
    });
    const message = await insertTaskMessage(tx, {
      id: newId('msg'),
      workspaceId,
      taskId,
      role: 'user',
      text: 'Here is the brief.',
    });
    await insertTaskMessageFiles(tx, workspaceId, message!.id, [id]);
  });
  return { id, text };
}

async function visit(path: string, name: string): Promise<void> {
  await page.goto(`${h.base}${path}`);
  await checkPage(name);
}

beforeAll(async () => {
  await mkdir(artifacts, { recursive: true });
  h = await startHarness({}, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
  page = await (await browser.newContext()).newPage();
});
afterAll(async () => {
  await browser?.close();
  await h.close();
});

describe('every page, at 1280×800 and 390×844', () => {
  it('sign-in, consent and account', async () => {
    const app = await h.registerApp({ name: 'Acme Sync', scopes: ['tasks.read', 'staff.list'] });
    await page.goto(h.authorizeUrl(app, 'tasks.read staff.list', 'v'.repeat(43)).toString());
    await checkPage('sign-in');
    await page.fill('#email', h.email);
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForLoadState();
    await checkPage('consent');
    const grantId = newId('grt');
    await upsertGrant(h.t.deps.pool, {
      id: grantId,
      appId: app.id,
      workspaceId: h.tenant.workspaceId,
      memberId: h.tenant.memberId,
      scopes: ['tasks.read'],
    });
    await visit('/account', 'account');
    await expect(page.locator('h1').textContent()).resolves.toBe('Your account');
    // The account page is one of the console's: its frame, with the page marked in the navigation.
    await expect(page.locator('nav[aria-label="Console"] [aria-current="page"]').textContent()).resolves.toBe(
      'Connected apps',
    );
    await expect(
      page.locator('nav[aria-label="Console"] a', { hasText: 'API keys' }).getAttribute('href'),
    ).resolves.toBe(`/console/${h.tenant.memberId}/keys`);
    // Its confirmation to cut an app off stays in the same frame.
    await visit(`/account/apps/${grantId}/revoke`, 'account-cut-off-confirm');
    await expect(page.locator('h1').textContent()).resolves.toBe('Cut off Acme Sync?');
    await expect(page.locator('nav[aria-label="Console"] [aria-current="page"]').textContent()).resolves.toBe(
      'Connected apps',
    );
  }, 120_000);

  it('the console: keys, a new key and its secret, a confirmation, the request log and a call', async () => {
    const base = `/console/${h.tenant.memberId}`;
    await visit(`${base}/keys`, 'keys-empty');
    await page.goto(`${h.base}${base}/keys/new`);
    await checkPage('key-new');
    await page.fill('#name', 'Production backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.waitForURL(/\/reveal\//);
    const secret = await page.locator('#secret').inputValue();
    await checkPage('key-secret');
    await page.reload();
    await checkPage('key-secret-already-shown');
    const bearer = { authorization: `Bearer ${secret}` };
    await fetch(`${h.base}/api/pub/v1/staff`, { headers: bearer });
    await fetch(`${h.base}/api/pub/v1/tasks/${newId('task')}`, { headers: bearer });
    await h.tenant.key({ livemode: true, name: 'Nightly batch job with a rather long name' });
    await visit(`${base}/keys`, 'keys');
    await page.getByRole('link', { name: /^Revoke Production/ }).click();
    await checkPage('key-revoke-confirm');
    await h.t.deps.requestLog.flush();
    // The successful call was two days ago: the quick ranges below leave it out.
    await h.t.deps.pool.query(sql.typeAlias('void')`
      update request_logs set created_at = created_at - interval '2 days'
      where workspace_id = ${h.tenant.workspaceId} and path = '/api/pub/v1/staff'
    `);
    await visit(`${base}/logs`, 'logs');
    await checkRequestLog(base);
    await page.goto(`${h.base}${base}/logs`);
    await page.locator('tbody a').first().click();
    await page.waitForLoadState();
    await checkPage('log-call');
    expect(page.url()).toContain('/logs/');
  }, 240_000);

  it('usage with a labelled chart, records, webhooks and deliveries, tasks, apps, status, errors', async () => {
    const base = `/console/${h.tenant.memberId}`;
    const { pool } = h.t.deps;
    await pool.query(sql.typeAlias('void')`
      insert into metering_records (id, workspace_id, project_id, key_id, operation, livemode, usage, cost_minor,
                                    currency, request_id, created_at)
      values ('mr_visual_1', ${h.tenant.workspaceId}, ${h.tenant.projectId}, null, 'text.generate', true, '{}', 1234,
              'USD', 'req_visual_1', now() - interval '3 days'),
             ('mr_visual_2', ${h.tenant.workspaceId}, ${h.tenant.projectId}, null, 'text.generate', true, '{}', 420,
              'USD', 'req_visual_2', now())
    `);
    await visit(`${base}/usage`, 'usage');
    const chart = page.locator('svg.chart');
    await expect(chart.locator('text', { hasText: 'Spend (USD)' }).count()).resolves.toBe(1);
    await expect(chart.locator('text', { hasText: 'Day (UTC)' }).count()).resolves.toBe(1);
    const projectName = (await page.locator('.legend li').first().textContent())!.trim();
    expect(projectName).not.toMatch(/^prj_/);
    await expect(chart.locator('a').first().getAttribute('aria-label')).resolves.toContain(projectName);
    await expectLatestBarInView();
    await page.goto(`${h.base}${base}/usage?days=7`);
    await expectLatestBarInView();
    await expect(page.locator('th').allTextContents()).resolves.not.toContain('');
    await visit(`${base}/usage/records`, 'usage-records');
    const created = await createWebhookEndpoint(pool, {
      projectId: h.tenant.projectId,
      url: 'https://hooks.example.com/a/rather/long/path/for/deliveries?with=query&and=more',
      events: ['job.failed', 'job.succeeded'],
      allowPrivate: true,
      workspaceId: h.tenant.workspaceId,
    });
    if ('problem' in created) throw new Error(created.problem.message);
    await visit(`${base}/webhooks`, 'webhooks');
    await visit(`${base}/webhooks/${created.endpoint.id}`, 'webhook-deliveries-empty');
    await insertDeliveries(created.endpoint.id);
    await visit(`${base}/webhooks/${created.endpoint.id}`, 'webhook-deliveries');
    // "Resend failed since…" leads to its confirmation page, which counts what it would resend.
    await page.setViewportSize(desktop);
    await page.fill('#resend-since', new Date(Date.now() - 3_600_000).toISOString().slice(0, 19));
    await page.getByRole('button', { name: 'Resend failed since…' }).click();
    await page.waitForURL(/\/resend\?since=/);
    await expect(page.locator('h1').textContent()).resolves.toMatch(/^Resend 1 failed delivery since /);
    await checkPage('webhook-resend-confirm');
    const taskId = newId('task');
    await pool.query(sql.typeAlias('void')`
      insert into tasks (id, workspace_id, project_id, title) values (${taskId}, ${h.tenant.workspaceId}, ${h.tenant.projectId}, 'Launch video')
    `);
    const file = await attachFile(taskId, 'brief-for-the-launch-video.pdf');
    await visit(`${base}/tasks`, 'tasks');
    // On a phone a task's id stays under its title, in the value column, not the label's.
    await page.setViewportSize(phone);
    const [title, id] = [
      await boxOf(page, 'td[data-label="Title"] a'),
      await boxOf(page, 'td[data-label="Title"] code'),
    ];
    expect({ left: Math.round(id.left), below: id.top >= title.bottom - 1 }).toEqual({
      left: Math.round(title.left),
      below: true,
    });
    await visit(`${base}/tasks/${taskId}`, 'task-board');
    const attached = page.locator('.messages .attachments li');
    await expect(attached.textContent()).resolves.toMatch(
      /brief-for-the-launch-video\.pdf\s+application\/pdf, 1 KB/,
    );
    const href = await attached.locator('a').getAttribute('href');
    expect(href).toBe(`${base}/files/${file.id}/content`);
    const download = await page.request.get(`${h.base}${href}`);
    expect({ status: download.status(), body: (await download.body()).toString() }).toEqual({
      status: 200,
      body: file.text,
    });
    await visit(`${base}/apps`, 'apps');
    await visit('/status', 'status');
    await visit(`${base}/no-such-page`, 'error-404');
    await visit(`/console/${h.second.memberId}/keys/new`, 'error-403');
    await visit(`${base}/no-such-page`, 'error-404');
    await expect(page.locator('h1').textContent()).resolves.toBe('Page not found');
  }, 300_000);
});

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: Buffer };

/** GET with exactly these headers (fetch would add Accept-Encoding); a stream ends at its headers. */
function get(path: string, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const request = http.get(`${h.base}${path}`, { headers }, (res) => {
      const answer = { status: res.statusCode!, headers: res.headers };
      if (res.headers['content-type']?.startsWith('text/event-stream')) {
        request.destroy();
        return resolve({ ...answer, body: Buffer.alloc(0) });
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ ...answer, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    request.on('error', reject);
  });
}

describe('compressed answers', () => {
  it('HTML, CSS and JSON in gzip or brotli when the client accepts it, ETags kept; streams never', async () => {
    const css = await readFile('api/web/assets/site.css');
    const plain = await get(stylesheetHref, {});
    expect({ encoding: plain.headers['content-encoding'], same: plain.body.equals(css) }).toEqual({
      encoding: undefined,
      same: true,
    });
    const gzipped = await get(stylesheetHref, { 'accept-encoding': 'gzip, deflate' });
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers.vary).toMatch(/Accept-Encoding/i);
    expect(gunzipSync(gzipped.body).equals(css)).toBe(true);
    expect(gzipped.body.length).toBeLessThan(css.length / 2);
    const again = await get(stylesheetHref, {
      'accept-encoding': 'gzip',
      'if-none-match': String(gzipped.headers.etag),
    });
    expect(again.status).toBe(304);
    const status = await get('/status', { 'accept-encoding': 'br;q=1, gzip;q=0.5' });
    expect({ status: status.status, encoding: status.headers['content-encoding'] }).toEqual({
      status: 200,
      encoding: 'br',
    });
    expect(brotliDecompressSync(status.body).toString()).toMatch(/^<!doctype html>/);
    await expect(get('/status', {}).then((a) => a.headers['content-encoding'])).resolves.toBeUndefined();
    const auth = { authorization: `Bearer ${h.tenant.testKey}` };
    const json = await get('/api/pub/v1/openapi.json', { ...auth, 'accept-encoding': 'gzip' });
    expect({ status: json.status, encoding: json.headers['content-encoding'] }).toEqual({
      status: 200,
      encoding: 'gzip',
    });
    expect(JSON.parse(gunzipSync(json.body).toString())).toHaveProperty('openapi');
    const taskId = newId('task');
    await h.t.deps.pool.query(sql.typeAlias('void')`
      insert into tasks (id, workspace_id, project_id, title) values (${taskId}, ${h.tenant.workspaceId}, ${h.tenant.projectId}, 'Streamed')
    `);
    const stream = await get(`/api/pub/v1/tasks/${taskId}/stream`, {
      ...auth,
      'accept-encoding': 'gzip, br',
    });
    expect({ type: stream.headers['content-type'], encoding: stream.headers['content-encoding'] }).toEqual({
      type: expect.stringMatching(/^text\/event-stream/),
      encoding: undefined,
    });
  });
});
