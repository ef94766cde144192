import { once } from 'node:events';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { createApiKey, unrestricted } from '../../../shared/keys/mintKeys.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { textGenerate } from '../../../worker/tasks/text__generate.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import { atTime } from '../../helpers/clock.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';
import { type Harness, password, startHarness } from '../oauth/harness.ts';

// The console as a member meets it: real Chromium on the real pages, keys used with plain fetch;
// live calls go to a local server speaking the OpenAI protocol and are billed as any live call.
let h: Harness;
let mock: OpenAiMock;
let browser: Browser;
let page: Page;
const artifacts = 'test/artifacts/console';
const xss = '<img src=x onerror="globalThis.__xss=1">';

const shot = (name: string) => page.screenshot({ path: `${artifacts}/${name}.png`, fullPage: true });
const staff = async (secret: string) =>
  (await fetch(`${h.base}/api/pub/v1/staff`, { headers: { authorization: `Bearer ${secret}` } })).status;

beforeAll(async () => {
  await mkdir(artifacts, { recursive: true });
  mock = await startOpenAiMock();
  h = await startHarness(
    {},
    {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      ...openaiEnv(mock),
      // 20 minor units per token, so each call's cost is its own and visible in the console.
      PRICES: JSON.stringify({ textInputPer1MTokens: 20_000_000, textOutputPer1MTokens: 20_000_000 }),
    },
  );
  worker = await startStandaloneWorker(h.t, (ctx) => ({
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [], timeoutMs: 2000 }),
    text__generate: jobTask(ctx, textGenerate(ctx)),
  }));
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push(body);
      // The first delivery fails with an explanation; the resend succeeds.
      if (received.length === 1) res.writeHead(503).end('<b>busy</b> try later');
      else res.writeHead(204).end();
    });
  }).listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  // These pages come from a local server: the browser needs the machine's network.
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
  page = await (
    await browser.newContext({ javaScriptEnabled: true, permissions: ['clipboard-read', 'clipboard-write'] })
  ).newPage();
});
afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  receiver?.closeAllConnections();
  receiver?.close();
  await h.close();
  await mock?.close();
});

let worker: StandaloneWorker;
let receiver: Server;
const received: string[] = [];
let secret = '';
let keyName = '';
/** The live calls made with the console's key: their request ids and the cost each answer stated. */
const calls: { requestId: string; cost: number }[] = [];
const usd = (minor: number) => `${(minor / 100).toFixed(2)} USD`;

describe('the web console in Chromium', () => {
  it('signs in and lists keys', async () => {
    await page.goto(`${h.base}/console`);
    expect(await page.title()).toBe('Sign in');
    await page.fill('#email', h.email);
    await page.fill('#password', password);
    await page.click('button[type=submit]');
    await page.waitForURL(`${h.base}/console/${h.tenant.memberId}/keys`);
    await expect(page.locator('h1').textContent()).resolves.toBe('API keys');
    // Keyboard: the first Tab reaches the skip link, Enter moves focus past the navigation.
    await page.keyboard.press('Tab');
    await expect(page.evaluate('document.activeElement.textContent')).resolves.toBe('Skip to content');
    await page.keyboard.press('Enter');
    await expect(page.evaluate('document.activeElement.id')).resolves.toBe('main');
    await shot('keys-empty');
  });

  it('creates a live key scoped to two operations; its secret is shown once and works only there', async () => {
    await page.getByRole('link', { name: 'Create a key' }).click();
    keyName = `CI key ${xss}`;
    await page.fill('#name', keyName);
    await page.check('input[name=mode][value=live]');
    await page.check('input[name=scope_level][value=operation]');
    await page.check('input[name=operations][value="staff.list"]');
    await page.check('input[name=operations][value="text.generate"]');
    // In the currency's major unit (issue 38): 50.00 USD.
    await page.fill('#cap', '50');
    await page.getByRole('button', { name: 'Create key' }).click();
    secret = await page.locator('#secret').inputValue();
    expect(secret).toMatch(/^svc_sk_live_/);
    // The copy button is the one script a page may run (by its hash): shown only when it runs.
    const copy = page.locator('button[data-copy]');
    await expect(copy.isVisible()).resolves.toBe(true);
    await copy.click();
    await page.waitForFunction("document.querySelector('button[data-copy]').textContent !== 'Copy'");
    await expect(copy.textContent()).resolves.toBe('Copied');
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await expect(page.locator('h1').textContent()).resolves.toBe(keyName);
    await shot('key-created');
    expect(await staff(secret)).toBe(200);
    const other = await fetch(`${h.base}/api/pub/v1/tasks/task_nope`, {
      headers: { authorization: `Bearer ${secret}` },
    });
    expect(other.status).toBe(403);
    // Billed calls, as curl would make them.
    for (const prompt of ['Hello', 'Write one line about the sea', 'Count to five, slowly please']) {
      const res = await fetch(`${h.base}/api/pub/v1/text`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ prompt }),
      });
      expect(res.status).toBe(201);
      const body = (await res.json()) as { cost: { amount: number; currency: string } };
      expect(body.cost.currency).toBe('USD');
      expect(body.cost.amount).toBeGreaterThan(0);
      calls.push({ requestId: res.headers.get('x-request-id')!, cost: body.cost.amount });
    }
    const spent = calls.reduce((sum, c) => sum + c.cost, 0);
    await page.goto(`${h.base}/console/${h.tenant.memberId}/keys`);
    const row = page.locator('tr', { hasText: 'CI key' });
    expect((await row.textContent())!.replace(/\s+/g, ' ')).toContain(`${usd(spent)} of 50.00 USD`);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('img').count()).toBe(0);
    // Screenshots last: a full-page capture of a long page leaves later clicks near its foot unreliable.
    await shot('keys');
    await page.goto(`${h.base}/console/${h.tenant.memberId}/keys/new`);
    await shot('key-new');
  });

  it('shows the calls in the request log, filtered, and one call in full', async () => {
    await h.t.deps.requestLog.flush();
    await page.goto(`${h.base}/console/${h.tenant.memberId}/logs`);
    await page.selectOption('#f-op', 'staff.list');
    await page.fill('#f-status', '2xx');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/operation=staff.list/);
    const rows = page.locator('tbody tr');
    await expect(rows.count()).resolves.toBe(1);
    await expect(rows.first().textContent()).resolves.toContain('/api/pub/v1/staff');
    await shot('logs');
    await rows.first().locator('a').click();
    await expect(page.locator('dl').textContent()).resolves.toMatch(/Request id\s*req_/);
    await shot('log-call');
    await page.goto(`${h.base}/console/${h.tenant.memberId}/logs?status=403`);
    await expect(page.locator('tbody tr').count()).resolves.toBe(1);
    // The billed calls, newest first, each with the cost its answer stated.
    await page.goto(`${h.base}/console/${h.tenant.memberId}/logs?operation=text.generate&status=2xx`);
    const billed = await page.locator('tbody tr').allTextContents();
    expect(billed).toHaveLength(calls.length);
    calls.toReversed().forEach((call, i) => {
      expect(billed[i]).toContain('/api/pub/v1/text');
      expect(billed[i]).toContain(usd(call.cost));
    });
    await page.locator('tbody tr a').first().click();
    await expect(page.locator('dl').textContent()).resolves.toContain(calls.at(-1)!.requestId);
  });

  it('shows the live calls as spend per day by key, the metering records behind the bar, and a CSV', async () => {
    const keyId = await h.t.deps.pool.oneFirst(sql.type(z.object({ id: z.string() }))`
      select id from api_keys where workspace_id = ${h.tenant.workspaceId} and name like 'CI key%'
    `);
    // What the calls wrote: one metering record each, at the cost each answer stated.
    const records = await h.t.deps.pool.any(sql.type(
      z.object({ id: z.string(), request_id: z.string(), cost_minor: z.number(), livemode: z.boolean() }),
    )`
      select id, request_id, cost_minor, livemode from metering_records
      where workspace_id = ${h.tenant.workspaceId} order by created_at
    `);
    expect(records.map((r) => [r.request_id, r.cost_minor, r.livemode])).toEqual(
      calls.map((c) => [c.requestId, c.cost, true]),
    );
    const spent = records.reduce((sum, r) => sum + r.cost_minor, 0);
    // Another workspace's spend on the same day must not show.
    await h.t.deps.pool.query(sql.typeAlias('void')`
      insert into metering_records (id, workspace_id, project_id, key_id, operation, livemode, usage, cost_minor,
                                    currency, request_id, created_at)
      values ('mr_console_elsewhere', ${h.second.workspaceId}, ${h.tenant.projectId}, null, 'text.generate', true,
              '{}', 999, 'USD', 'req_elsewhere', now())
    `);
    await page.goto(`${h.base}/console/${h.tenant.memberId}/usage?split=key`);
    const main = (await page.locator('main').textContent()) ?? '';
    expect(main).toContain(`Spend in the last 90 days: ${usd(spent)}`);
    expect(main).not.toContain('9.99');
    const bar = page.locator(`.chart a[href*="part=${keyId}"]`);
    await expect(bar.count()).resolves.toBe(1);
    // Named, not by id (issue 23): the key's name and the day's spend on it.
    await expect(bar.getAttribute('aria-label')).resolves.toContain(`${keyName}: ${usd(spent)}`);
    await expect(bar.getAttribute('aria-label')).resolves.not.toContain(keyId);
    await shot('usage');
    await bar.click();
    const recordRows = await page.locator('tbody tr').allTextContents();
    expect(recordRows).toHaveLength(calls.length);
    for (const call of calls) {
      expect(recordRows.find((r) => r.includes(call.requestId))).toContain(usd(call.cost));
    }
    await shot('usage-records');
    const csv = await page.request.get(`${h.base}/console/${h.tenant.memberId}/usage.csv?split=key`);
    expect(csv.headers()['content-type']).toContain('text/csv');
    const text = await csv.text();
    for (const record of records) expect(text).toContain(record.id);
    expect(text).not.toContain('mr_console_elsewhere');
  });

  it('rolls the key: the old secret works for the overlap, then stops', async () => {
    await page.goto(`${h.base}/console/${h.tenant.memberId}/keys`);
    const row = page.locator('tr', { hasText: 'CI key' });
    await expect(row.locator('td').nth(5).textContent()).resolves.toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/,
    );
    // Roll goes through its confirmation page (issue 23), which asks for the overlap.
    await row.getByRole('link', { name: /^Roll / }).click();
    await page.fill('#overlap', '600');
    const rolledAt = Date.now();
    await page.getByRole('button', { name: /^Roll / }).click();
    const rolled = await page.locator('#secret').inputValue();
    expect(rolled).not.toBe(secret);
    await shot('key-rolled');
    expect(await staff(rolled)).toBe(200);
    expect(await staff(secret)).toBe(200);
    // The console's api runs in this process: past the overlap on its clock, the old secret stops.
    await atTime(rolledAt + 601_000 + 60_000, async () => {
      expect(await staff(secret)).toBe(401);
      expect(await staff(rolled)).toBe(200);
    });
    await page.goto(`${h.base}/console/${h.tenant.memberId}/keys`);
    await page
      .locator('tr', { hasText: 'CI key' })
      .getByRole('link', { name: /^Revoke / })
      .click();
    await page.getByRole('button', { name: /^Revoke / }).click();
    await page.waitForURL(`${h.base}/console/${h.tenant.memberId}/keys?done=key-revoked`);
    await expect(page.getByRole('status').textContent()).resolves.toContain('The key was revoked');
    expect(await staff(rolled)).toBe(401);
  });

  it('registers a webhook, shows a failed delivery with the answer, and resends it', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook?x="><script>alert(1)</script>`;
    await page.goto(`${h.base}/console/${h.tenant.memberId}/webhooks`);
    await page.fill('#wh-url', url);
    await page.check('input[name=events][value="job.failed"]');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await expect(page.locator('#secret').inputValue()).resolves.toMatch(/^whsec_/);
    await page.goto(`${h.base}/console/${h.tenant.memberId}/webhooks`);
    await expect(page.locator('tbody').textContent()).resolves.toContain('/hook?x=');
    expect(await page.locator('script').count()).toBe(0);
    await shot('webhooks');
    await h.t.deps.pool.transaction((tx) =>
      recordEvent(tx, {
        workspaceId: h.tenant.workspaceId,
        projectId: h.tenant.projectId,
        type: 'job.failed',
        data: { job: { id: 'job_console' } },
      }),
    );
    await waitUntil(async () => (received.length >= 1 ? true : undefined));
    // A reload while the click's navigation is still under way fails ("Not attached to an active
    // page"): each click that navigates is followed by the load of the page it leads to.
    const endpointPage = page.waitForEvent('load');
    await page.locator('tbody a').first().click();
    await endpointPage;
    const delivery = page.locator('tr[data-delivery]');
    await waitUntil(async () => {
      await page.reload();
      return (await delivery.textContent())?.includes('HTTP 503') ? true : undefined;
    });
    await expect(delivery.textContent()).resolves.toContain('failed');
    // The receiver's answer is shown as text.
    await expect(delivery.locator('pre').textContent()).resolves.toBe('<b>busy</b> try later');
    const redirected = page.waitForEvent('load');
    await delivery.getByRole('button', { name: 'Resend' }).click();
    await redirected;
    await waitUntil(async () => (received.length >= 2 ? true : undefined));
    expect(received[1]).toBe(received[0]);
    await waitUntil(async () => {
      await page.reload();
      return (await delivery.textContent())?.includes('HTTP 204') ? true : undefined;
    });
    await expect(delivery.textContent()).resolves.toContain('succeeded');
    await shot('webhook-deliveries');
  });

  it("opens a task's media board: messages, a video played by range, files to download; payloads inert", async () => {
    const { pool, objectStore } = h.t.deps;
    const mp4 = await readFile('shared/videos/fixtures/16x9-720p.mp4');
    const taskId = newId('task');
    const videoFileId = newId('file');
    const docId = newId('file');
    await objectStore.put(`console-test/${videoFileId}`, mp4, mp4.length, 'video/mp4');
    await objectStore.put(`console-test/${docId}`, Buffer.from('<script>alert(1)</script>'), 25, 'text/html');
    await pool.query(sql.typeAlias('void')`
      insert into tasks (id, workspace_id, project_id, title) values (${taskId}, ${h.tenant.workspaceId}, ${h.tenant.projectId}, ${`Launch ${xss}`})
    `);
    await pool.query(sql.typeAlias('void')`
      insert into task_messages (id, workspace_id, task_id, seq, role, text)
      values (${newId('msg')}, ${h.tenant.workspaceId}, ${taskId}, 1, 'user', ${`Make a clip ${xss}`})
    `);
    await pool.query(sql.typeAlias('void')`
      insert into files (id, workspace_id, filename, mime_type, size_bytes, kind, storage_key, task_id)
      values (${videoFileId}, ${h.tenant.workspaceId}, 'clip.mp4', 'video/mp4', ${mp4.length}, 'video',
              ${`console-test/${videoFileId}`}, ${taskId}),
             (${docId}, ${h.tenant.workspaceId}, ${`notes ${xss}.html`}, 'text/html', 25, 'file',
              ${`console-test/${docId}`}, ${taskId})
    `);
    const videoId = newId('vid');
    await pool.query(sql.typeAlias('void')`
      insert into videos (id, workspace_id, task_id, project_id, file_id, title, prompt, status, aspect_ratio,
                          resolution, requested_duration_seconds, duration_seconds, livemode)
      values (${videoId}, ${h.tenant.workspaceId}, ${taskId}, ${h.tenant.projectId}, ${videoFileId}, 'Teaser',
              'a teaser', 'ready', '16:9', '720p', 2, 2, false)
    `);
    await page.goto(`${h.base}/console/${h.tenant.memberId}/tasks`);
    const mediaFetch = page
      .waitForResponse(
        (r) => r.url().endsWith(`/videos/${videoId}/file`) && r.request().headers().range !== undefined,
      )
      .then((r) => r.status());
    await page.getByRole('link', { name: /^Launch / }).click();
    await expect(page.locator('h1').textContent()).resolves.toBe(`Launch ${xss}`);
    await expect(page.locator('.messages').textContent()).resolves.toContain(`Make a clip ${xss}`);
    await expect(page.locator(`li[data-file="${docId}"]`).textContent()).resolves.toContain(
      `notes ${xss}.html`,
    );
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __xss?: number }).__xss)).toBeUndefined();
    const video = page.locator(`li[data-video="${videoId}"] video`);
    await expect(video.count()).resolves.toBe(1);
    // The browser's own media stack fetches the clip by Range (preload="metadata"): answered 206.
    await expect(mediaFetch).resolves.toBe(206);
    await shot('task-board');
    const src = await video.getAttribute('src');
    const range = await page.request.get(`${h.base}${src!}`, { headers: { range: 'bytes=100-199' } });
    expect(range.status()).toBe(206);
    expect(range.headers()['content-range']).toBe(`bytes 100-199/${mp4.length}`);
    expect(Buffer.compare(await range.body(), mp4.subarray(100, 200))).toBe(0);
    const doc = await page.request.get(`${h.base}/console/${h.tenant.memberId}/files/${docId}/content`);
    expect(doc.headers()['content-disposition']).toMatch(/^attachment/);
    expect(doc.headers()['content-security-policy']).toBe('sandbox');
    // Another workspace's member cannot reach the bytes through their own console path.
    const elsewhere = await page.request.get(`${h.base}/console/${h.second.memberId}/videos/${videoId}/file`);
    expect(elsewhere.status()).toBe(404);
  });

  it('registers an OAuth app through the same rules as the CLI; sensitive scopes need verification', async () => {
    await page.goto(`${h.base}/console/${h.tenant.memberId}/apps`);
    await page.fill('#app-name', `Sync ${xss}`);
    await page.fill('#app-redirects', 'https://sync.example/cb');
    await page.check('input[name=scopes][value="files.upload"]');
    await page.getByRole('button', { name: 'Register app' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('verified app: files.upload');
    await page.fill('#app-name', `Sync ${xss}`);
    await page.fill('#app-redirects', 'https://sync.example/cb');
    await page.check('input[name=scopes][value="tasks.read"]');
    await page.getByRole('button', { name: 'Register app' }).click();
    await expect(page.locator('#secret').inputValue()).resolves.toMatch(/^svc_ocs_/);
    await page.goto(`${h.base}/console/${h.tenant.memberId}/apps`);
    const row = page.locator('tr[data-app]');
    await expect(row.textContent()).resolves.toContain(`Sync ${xss}`);
    await expect(row.textContent()).resolves.toContain('not verified');
    await expect(row.textContent()).resolves.toContain('Read a task');
    expect(await page.locator('img').count()).toBe(0);
    await shot('apps');
  });

  it('keeps workspaces apart; a member without developer access cannot create keys', async () => {
    await page.goto(`${h.base}/console/${h.second.memberId}/keys`);
    const body = (await page.locator('main').textContent()) ?? '';
    expect(body).toContain('cannot create keys');
    expect(body).not.toContain('CI key');
    await page.goto(`${h.base}/console/${h.second.memberId}/tasks`);
    expect(await page.locator('main').textContent()).not.toContain('Launch');
    await page.goto(`${h.base}/console/${h.second.memberId}/webhooks`);
    expect(await page.locator('main').textContent()).not.toContain('/hook');
    await shot('keys-second-workspace');
    const form = await page.goto(`${h.base}/console/${h.second.memberId}/keys/new`);
    expect(form?.status()).toBe(403);
    // Nor can they roll one of the workspace's keys (which would hand them its secret).
    const secondKey = await h.t.deps.pool.transaction((tx) =>
      createApiKey(tx, {
        workspaceId: h.second.workspaceId,
        memberId: h.second.memberId,
        projectIds: [],
        livemode: false,
        name: 'Colleague key',
        ...unrestricted(),
      }),
    );
    await page.goto(`${h.base}/console/${h.second.memberId}/keys`);
    await expect(page.locator('main').textContent()).resolves.toContain('Colleague key');
    expect(await page.getByRole('button', { name: /^Roll / }).count()).toBe(0);
    expect(await page.getByRole('link', { name: /^Roll / }).count()).toBe(0);
    const token = await page.locator('input[name=_csrf]').first().inputValue();
    const roll = await page.request.post(`${h.base}/console/${h.second.memberId}/keys/${secondKey.id}/roll`, {
      form: { _csrf: token, overlap_seconds: '0' },
    });
    expect(roll.status()).toBe(403);
    await page.goto(`${h.base}/console/${h.second.memberId}/logs`);
    await expect(page.locator('tbody tr').count()).resolves.toBe(0);
    const stranger = await page.goto(`${h.base}/console/mem_someone_else/keys`);
    expect(stranger?.status()).toBe(404);
  });

  it('refuses a form without this session’s CSRF token', async () => {
    const res = await page.request.post(`${h.base}/console/${h.tenant.memberId}/keys`, {
      form: { _csrf: 'forged', name: 'x', projects: h.tenant.projectId },
    });
    expect(res.status()).toBe(403);
  });

  it('serves the public status page', async () => {
    const res = await page.goto(`${h.base}/status`);
    expect(res?.status()).toBe(200);
    await expect(page.locator('section').count()).resolves.toBe(5);
    await expect(page.locator('section').first().locator('.bars span').count()).resolves.toBe(90);
    await shot('status');
  });
});
