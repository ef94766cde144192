import { mkdir } from 'node:fs/promises';

import { AxeBuilder } from '@axe-core/playwright';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';

import { insertEvent } from '../../../shared/db/queries/events.ts';
import { upsertGrant } from '../../../shared/db/queries/oauthGrants.ts';
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
import { type Harness, password, startHarness } from '../oauth/harness.ts';

// Every page a person meets, in the bundled Chromium at a desktop and a phone size: axe-core finds
// no serious or critical violation, nothing scrolls sideways on the phone, body text and buttons
// render in the bundled sans font, and a screenshot of each lands in test/artifacts/pages/.
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

/** Checks the page now loaded at both sizes and saves its screenshots. */
async function checkPage(name: string): Promise<void> {
  await page.setViewportSize(desktop);
  const axe = await new AxeBuilder({ page }).analyze();
  const serious = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(serious.map((v) => `${name}: ${v.id} ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual(
    [],
  );
  // A heading that quotes a URL or an id sets it in monospace on purpose.
  if ((await page.locator('h1 code').count()) === 0) {
    expect({ name, h1: await renderedFont('h1') }).toEqual({ name, h1: sansFont });
  }
  expect({ name, brand: await renderedFont('.brand') }).toEqual({ name, brand: sansFont });
  if ((await page.locator('button').count()) > 0) {
    expect({ name, button: await renderedFont('button') }).toEqual({ name, button: sansFont });
  }
  await page.screenshot({ path: `${artifacts}/${name}-desktop.png`, fullPage: true });
  await page.setViewportSize(phone);
  const widths = (await page.evaluate(
    '[document.documentElement.scrollWidth, window.innerWidth]',
  )) as number[];
  expect({ name, scrollWidth: widths[0]! <= widths[1]! ? 'fits' : widths[0] }).toEqual({
    name,
    scrollWidth: 'fits',
  });
  await page.screenshot({ path: `${artifacts}/${name}-phone.png`, fullPage: true });
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
    await upsertGrant(h.t.deps.pool, {
      id: newId('grt'),
      appId: app.id,
      workspaceId: h.tenant.workspaceId,
      memberId: h.tenant.memberId,
      scopes: ['tasks.read'],
    });
    await visit('/account', 'account');
    await expect(page.locator('h1').textContent()).resolves.toBe('Your account');
  });

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
    await fetch(`${h.base}/api/pub/v1/staff`, { headers: { authorization: `Bearer ${secret}` } });
    await h.tenant.key({ livemode: true, name: 'Nightly batch job with a rather long name' });
    await visit(`${base}/keys`, 'keys');
    await page.getByRole('link', { name: /^Revoke Production/ }).click();
    await checkPage('key-revoke-confirm');
    await h.t.deps.requestLog.flush();
    await visit(`${base}/logs`, 'logs');
    await page.locator('tbody a').first().click();
    await page.waitForLoadState();
    await checkPage('log-call');
    expect(page.url()).toContain('/logs/');
  }, 120_000);

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
    await visit(`${base}/tasks`, 'tasks');
    await visit(`${base}/tasks/${taskId}`, 'task-board');
    await visit(`${base}/apps`, 'apps');
    await visit('/status', 'status');
    await visit(`${base}/no-such-page`, 'error-404');
    await visit(`/console/${h.second.memberId}/keys/new`, 'error-403');
    await visit(`${base}/no-such-page`, 'error-404');
    await expect(page.locator('h1').textContent()).resolves.toBe('Page not found');
  }, 180_000);
});
