import { mkdir } from 'node:fs/promises';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';
import { z } from 'zod';

import { when } from '../../../api/web/console/context.ts';
import { listEndpointDeliveries } from '../../../shared/db/queries/webhooks.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { createWebhookEndpoint } from '../../../shared/webhooks/endpoints.ts';
import { launchChromium } from '../../../worker/render/chromium.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import { axeViolations } from '../../helpers/axe.ts';
import { verdict, webhookReceiver } from '../../helpers/webhookReceiver.ts';
import { type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';
import { type Harness, password, startHarness } from '../oauth/harness.ts';

// The webhook page of issue 38 in Chromium at a desktop and a phone size, as a developer uses it:
// rotate the secret with an overlap, send a test event, see a failing delivery's next attempt,
// expire the old secret. The in-process worker runs the real delivery job against a receiver on
// loopback; the standardwebhooks library checks each delivery as a receiver would. Every page has
// no axe-core violation of any impact at either size; screenshots land in test/artifacts/pages/.
let h: Harness;
let browser: Browser;
let page: Page;
let worker: StandaloneWorker;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
const artifacts = 'test/artifacts/pages';
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };

/** A job id starting with "fail" is refused with a 503 (its retry waits 10 minutes); others taken. */
const answer = ({ body }: { body: string }) =>
  (JSON.parse(body) as { data: { job?: { id: string } } }).data.job?.id.startsWith('fail') ? 503 : 204;

beforeAll(async () => {
  await mkdir(artifacts, { recursive: true });
  h = await startHarness({}, { WEBHOOK_ALLOW_PRIVATE: 'true' });
  receiver = await webhookReceiver(() => 'whsec_AAAA', answer);
  worker = await startStandaloneWorker(h.t, (ctx) => ({
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [600_000], timeoutMs: 2000 }),
  }));
  ({ browser } = await launchChromium({ logger: createLogger('silent', 'test-browser'), network: true }));
  page = await (await browser.newContext()).newPage();
  await page.goto(`${h.base}/account/sign-in`);
  await page.fill('#email', h.email);
  await page.fill('#password', password);
  await page.click('button[type=submit]');
  await page.waitForURL(/\/account$|\/console\//);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await worker?.stop();
  await receiver?.server.close();
  await h?.close();
});

/** The page now loaded, at both sizes: no axe violation of any impact, no sideways scroll, screenshots. */
async function checkPage(name: string): Promise<void> {
  for (const [size, viewport] of [
    ['desktop', desktop],
    ['phone', phone],
  ] as const) {
    await page.setViewportSize(viewport);
    expect(
      (await axeViolations(page)).map(
        (v) => `${name} ${size}: ${v.impact} ${v.id} ${v.nodes.map((n) => n.target).join()}`,
      ),
    ).toEqual([]);
    const [scrollWidth, innerWidth] = (await page.evaluate(
      '[document.documentElement.scrollWidth, window.innerWidth]',
    )) as number[];
    expect({ name, size, fits: scrollWidth! <= innerWidth! }).toEqual({ name, size, fits: true });
    await page.screenshot({ path: `${artifacts}/${name}-${size}.png`, fullPage: true });
  }
  await page.setViewportSize(desktop);
}

const raise = (jobId: string) =>
  h.t.deps.pool.transaction((tx) =>
    recordEvent(tx, {
      workspaceId: h.tenant.workspaceId,
      projectId: h.tenant.projectId,
      type: 'job.failed',
      data: { job: { id: jobId } },
    }),
  );
const arrived = (eventId: string) => waitUntil(async () => receiver.of(eventId)[0]);

describe('the webhook page at 1280×800 and 390×844', () => {
  it('rotates with an overlap, sends a test event, shows the next retry, expires the old secret', async () => {
    const { pool } = h.t.deps;
    const base = `/console/${h.tenant.memberId}`;
    const created = await createWebhookEndpoint(pool, {
      projectId: h.tenant.projectId,
      url: receiver.url,
      events: ['job.failed'],
      allowPrivate: true,
      workspaceId: h.tenant.workspaceId,
    });
    if ('problem' in created) throw new Error(created.problem.message);
    const { id: endpointId, secret: oldSecret } = created.endpoint;
    const webhookPage = `${h.base}${base}/webhooks/${endpointId}`;

    await page.goto(webhookPage);
    await expect(page.locator('[data-overlap]').count()).resolves.toBe(0);

    // Rotate, keeping the old secret for the default 24 hours.
    await page.getByRole('link', { name: 'Rotate secret…' }).click();
    await page.waitForURL(/\/rotate$/);
    await expect(page.locator('#overlap').inputValue()).resolves.toBe('86400');
    await checkPage('webhook-rotate-confirm');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.waitForURL(/\/reveal\//);
    const newSecret = await page.locator('#secret').inputValue();
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    const until = await pool.oneFirst(sql.type(z.object({ until: z.string() }))`
      select to_char(previous_secret_expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as until
      from webhook_endpoints where id = ${endpointId}
    `);
    expect(Math.round((Date.parse(until) - Date.now()) / 3_600_000)).toBe(24);
    await expect(page.locator('main').textContent()).resolves.toContain(
      `with the old one too until ${when(until)}`,
    );
    await checkPage('webhook-rotated-secret');

    await page.goto(webhookPage);
    await expect(page.locator('[data-overlap]').textContent()).resolves.toContain(
      `Old secret accepted until ${when(until)}`,
    );
    await page.goto(`${h.base}${base}/webhooks`);
    await expect(page.locator(`tr[data-endpoint="${endpointId}"]`).textContent()).resolves.toContain(
      `old secret accepted until ${when(until)}`,
    );
    await checkPage('webhooks-list');

    // A test event: posted, redirected, arrives once, signed with both secrets.
    await page.goto(webhookPage);
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(/\?done=webhook-test-sent$/);
    // Another straight after is refused, back on the same page, which says so.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.waitForURL(/\?done=webhook-test-too-soon$/);
    await expect(page.locator('main').textContent()).resolves.toContain(
      'No test event was sent: one went to this endpoint less than 10 seconds ago.',
    );
    const test = await waitUntil(async () =>
      receiver.received.find((r) => (JSON.parse(r.body) as { type: string }).type === 'webhook.test'),
    );
    expect(JSON.parse(test.body)).toMatchObject({
      type: 'webhook.test',
      data: { webhookId: endpointId, sentFrom: 'console' },
    });
    expect(verdict(test, oldSecret)).toBe('verified');
    expect(verdict(test, newSecret)).toBe('verified');
    await page.reload();
    await waitUntil(async () =>
      (await listEndpointDeliveries(pool, endpointId, 10))[0]?.status === 'succeeded' ? true : undefined,
    );
    await page.reload();
    await expect(page.locator(`tr[data-delivery]`).first().textContent()).resolves.toContain('webhook.test');
    expect(receiver.received.filter((r) => r.id === test.id)).toHaveLength(1);
    expect(await listEndpointDeliveries(pool, endpointId, 10)).toHaveLength(1);

    // An event of the service during the overlap verifies with either secret too.
    const during = await arrived(await raise('job_during'));
    expect(verdict(during, oldSecret)).toBe('verified');
    expect(verdict(during, newSecret)).toBe('verified');

    // A refused delivery waits for its retry, and the page says when.
    const failingEvent = await raise('fail_once');
    await arrived(failingEvent);
    const failing = await waitUntil(async () => {
      const row = (await listEndpointDeliveries(pool, endpointId, 10)).find(
        (d) => d.event_id === failingEvent,
      );
      return row?.attempts === 1 ? row : undefined;
    });
    expect(failing.status).toBe('pending');
    await page.goto(webhookPage);
    await expect(
      page.locator(`tr[data-delivery="${failing.id}"] td[data-label="Status"]`).textContent(),
    ).resolves.toMatch(new RegExp(`pending\\s*next attempt ${when(failing.next_attempt_at!)}`));
    await expect(page.locator('th').allTextContents()).resolves.toEqual([
      'Event',
      'Status',
      'Attempts',
      'Actions',
    ]);
    await checkPage('webhook-deliveries-retry');

    // Posted without its confirmation page's field, expiring goes there and changes nothing.
    const csrf = await page.locator('input[name=_csrf]').first().inputValue();
    const unconfirmed = await page.request.post(`${webhookPage}/expire-old-secret`, {
      form: { _csrf: csrf },
      maxRedirects: 0,
    });
    expect(unconfirmed.status()).toBe(303);
    expect(unconfirmed.headers().location).toBe(`${base}/webhooks/${endpointId}/expire-old-secret`);
    await page.reload();
    await expect(page.locator('[data-overlap]').count()).resolves.toBe(1);

    // Expire the old secret now: the page stops saying it is accepted, and only the new one signs.
    await page.getByRole('link', { name: 'Expire the old secret now…' }).click();
    await page.waitForURL(/\/expire-old-secret$/);
    await checkPage('webhook-expire-confirm');
    await page.getByRole('button', { name: 'Expire old secret' }).click();
    await page.waitForURL(/\?done=webhook-old-secret-expired$/);
    await expect(page.locator('[data-overlap]').count()).resolves.toBe(0);
    await expect(page.locator('main').textContent()).resolves.toContain(
      'deliveries are signed with the current secret alone',
    );
    await checkPage('webhook-old-secret-expired');
    const after = await arrived(await raise('job_after'));
    expect(verdict(after, newSecret)).toBe('verified');
    expect(verdict(after, oldSecret)).toBe('No matching signature found');
  }, 240_000);
});
