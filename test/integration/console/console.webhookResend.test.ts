import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import {
  listDeliveryAttempts,
  listEndpointDeliveries,
  type WebhookDeliveryRow,
} from '../../../shared/db/queries/webhooks.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { webhookReceiver } from '../../helpers/webhookReceiver.ts';
import { type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';
import { inputValue, signedInConsole } from '../oauth/harness.ts';

// The deliveries page's Resend button and "Resend failed since…" form (issue 39), posted as a
// signed-in member's browser would (CSRF token, confirmation, redirect after POST), with the
// in-process worker delivering to a receiver on loopback. One attempt per delivery: a 5xx fails it.
let session: Awaited<ReturnType<typeof signedInConsole>>;
let worker: StandaloneWorker;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  session = await signedInConsole({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  worker = await startStandaloneWorker(session.h.t, (ctx) => ({
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [], timeoutMs: 2000 }),
  }));
});
afterAll(async () => {
  await worker?.stop();
  for (const close of closers) await close();
  await session?.h.close();
});

const pool = () => session.h.t.deps.pool;
const resentBy = (email: string) =>
  new RegExp(
    `^resent by ${email.replaceAll('.', '\\.')} at \\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$`,
  );

/** A job whose id starts with "ok" is taken at once; others fail the first time. */
const failFirst = ({ body, seen }: { body: string; seen: number }) =>
  (JSON.parse(body) as { data: { job: { id: string } } }).data.job.id.startsWith('ok') || seen > 0
    ? 204
    : 500;

async function endpointWithReceiver(owner: Tenant = session.h.tenant) {
  const signing = { secret: '' };
  const receiver = await webhookReceiver(() => signing.secret, failFirst);
  closers.push(() => receiver.server.close());
  const endpoint = await addWebhookEndpoint(
    pool(),
    { workspaceId: owner.workspaceId, projectId: owner.projectId },
    receiver.url,
    ['job.failed'],
  );
  signing.secret = endpoint.secret;
  return { endpoint, receiver };
}

const raise = (jobId: string, owner: Tenant = session.h.tenant) =>
  pool().transaction((tx) =>
    recordEvent(tx, {
      workspaceId: owner.workspaceId,
      projectId: owner.projectId,
      type: 'job.failed',
      data: { job: { id: jobId } },
    }),
  );

const settled = (endpointId: string, eventId: string, status: WebhookDeliveryRow['status']) =>
  waitUntil(async () => {
    const row = (await listEndpointDeliveries(pool(), endpointId, 100)).find((d) => d.event_id === eventId);
    return row?.status === status ? row : undefined;
  });

const attemptJobs = (deliveryId: string) =>
  pool().anyFirst(sql.type(z.object({ key: z.string() }))`
    select key from graphile_worker.jobs where key like ${`webhook:${deliveryId}:%`}
  `);

/** The CSRF token of the deliveries page (every console form carries the session's token). */
const csrfOf = async (endpointId: string) =>
  inputValue((await session.client.get(`${session.base}/webhooks/${endpointId}`)).text, '_csrf');

describe('resending from the console', () => {
  it('Resend sends the same webhook-id again as the member, then redirects; a reload repeats nothing', async () => {
    const { endpoint, receiver } = await endpointWithReceiver();
    const eventId = await raise('job_console_once');
    const failed = await settled(endpoint.id, eventId, 'failed');
    const page = await session.client.get(`${session.base}/webhooks/${endpoint.id}`);
    expect(page.text).toContain(
      `action="${session.base}/webhooks/${endpoint.id}/deliveries/${failed.id}/resend"`,
    );

    const posted = await session.client.post(
      `${session.base}/webhooks/${endpoint.id}/deliveries/${failed.id}/resend`,
      { _csrf: await csrfOf(endpoint.id) },
    );
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(`${session.base}/webhooks/${endpoint.id}?done=delivery-resent`);
    await settled(endpoint.id, eventId, 'succeeded');
    const copies = receiver.of(eventId);
    expect(copies.map((c) => c.status)).toEqual([500, 204]);
    expect(copies[1]!.body).toBe(copies[0]!.body);
    expect(copies.every((c) => c.valid)).toBe(true);
    const attempts = await listDeliveryAttempts(pool(), failed.id);
    expect(attempts[1]!.reason).toMatch(resentBy(session.h.email));

    // The page redirected to (and a reload of it) says what happened, shows why, and sends nothing.
    for (let load = 0; load < 2; load += 1) {
      const shown = await session.client.get(posted.location!);
      expect(shown.status).toBe(200);
      expect(shown.text).toContain('The delivery was queued again');
      expect(shown.text).toContain(`resent by ${session.h.email}`);
    }
    expect(await attemptJobs(failed.id)).toEqual([]);
    expect(await listDeliveryAttempts(pool(), failed.id)).toHaveLength(2);
  });

  it('Resend failed since… confirms how many, then resends only the failed ones created since', async () => {
    const { endpoint, receiver } = await endpointWithReceiver();
    const before = await raise('job_console_before');
    const beforeDelivery = await settled(endpoint.id, before, 'failed');
    // An hour older than the time asked for below.
    await pool().query(sql.typeAlias('void')`
      update webhook_deliveries set created_at = now() - interval '1 hour' where id = ${beforeDelivery.id}
    `);
    const first = await raise('job_console_first');
    const firstDelivery = await settled(endpoint.id, first, 'failed');
    const took = await raise('ok_console_taken');
    await settled(endpoint.id, took, 'succeeded');
    const second = await raise('job_console_second');
    const secondDelivery = await settled(endpoint.id, second, 'failed');

    // What the form's datetime-local field sends: a UTC time to the second, without a zone.
    const since = new Date(Date.now() - 30 * 60_000).toISOString().slice(0, 19);
    const confirm = await session.client.get(`${session.base}/webhooks/${endpoint.id}/resend?since=${since}`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Resend 2 failed deliveries since');
    expect(inputValue(confirm.text, 'since')).toBe(`${since}.000Z`);

    // Posted without the confirmation page's field, it goes there and sends nothing.
    const unconfirmed = await session.client.post(`${session.base}/webhooks/${endpoint.id}/resend`, {
      _csrf: inputValue(confirm.text, '_csrf'),
      since,
    });
    expect(unconfirmed.status).toBe(303);
    expect(unconfirmed.location).toBe(
      `${session.base}/webhooks/${endpoint.id}/resend?since=${encodeURIComponent(`${since}.000Z`)}`,
    );
    expect(await attemptJobs(firstDelivery.id)).toEqual([]);

    const posted = await session.client.post(`${session.base}/webhooks/${endpoint.id}/resend`, {
      _csrf: inputValue(confirm.text, '_csrf'),
      since: inputValue(confirm.text, 'since'),
      confirm: 'yes',
    });
    expect(posted.status).toBe(303);
    expect(posted.location).toBe(`${session.base}/webhooks/${endpoint.id}?done=deliveries-resent`);
    await settled(endpoint.id, first, 'succeeded');
    await settled(endpoint.id, second, 'succeeded');
    for (const id of [firstDelivery.id, secondDelivery.id]) {
      expect((await listDeliveryAttempts(pool(), id))[1]!.reason).toMatch(resentBy(session.h.email));
    }
    expect(receiver.of(first).map((c) => c.status)).toEqual([500, 204]);
    expect(receiver.of(second).map((c) => c.status)).toEqual([500, 204]);
    expect(receiver.of(took)).toHaveLength(1);
    expect(receiver.of(before)).toHaveLength(1);
    expect(
      (await listEndpointDeliveries(pool(), endpoint.id, 10)).find((d) => d.id === beforeDelivery.id),
    ).toMatchObject({
      status: 'failed',
      attempts: 1,
    });
    const shown = await session.client.get(posted.location!);
    expect(shown.text).toContain('The failed deliveries were queued again');
    const nothing = await session.client.get(`${session.base}/webhooks/${endpoint.id}/resend?since=${since}`);
    expect(nothing.text).toContain('Nothing to resend');
  });

  it('refuses a bad time beside the field, unknown and other workspaces’ deliveries, forged forms and non-developers', async () => {
    const { endpoint } = await endpointWithReceiver();
    const ours = await settled(endpoint.id, await raise('job_console_ours'), 'failed');
    const other = await createTenant(pool());
    const theirs = await endpointWithReceiver(other);
    const theirDelivery = await settled(
      theirs.endpoint.id,
      await raise('job_console_theirs', other),
      'failed',
    );
    const csrf = await csrfOf(endpoint.id);
    const deliveriesPath = `${session.base}/webhooks/${endpoint.id}`;

    const typed = await session.client.get(`${deliveriesPath}/resend?since=next%20tuesday`);
    expect(typed.status).toBe(400);
    expect(typed.text).toContain('Enter a date and time, such as 2026-11-29T08:30 (UTC).');
    expect(typed.text).toMatch(/id="resend-since"[^>]*value="next tuesday"/);
    expect(typed.text).toMatch(/id="resend-since"[^>]*aria-invalid="true"/);
    const postedBadTime = await session.client.post(`${deliveriesPath}/resend`, {
      _csrf: csrf,
      since: '2026-02-30T10:00',
      confirm: 'yes',
    });
    expect(postedBadTime.status).toBe(400);

    const resend = (path: string, fields: Record<string, string> = { _csrf: csrf }) =>
      session.client.post(path, fields);
    expect((await resend(`${deliveriesPath}/deliveries/whd_nope/resend`)).status).toBe(404);
    // Another workspace's delivery: under its own endpoint or under ours, not found.
    expect(
      (await resend(`${session.base}/webhooks/${theirs.endpoint.id}/deliveries/${theirDelivery.id}/resend`))
        .status,
    ).toBe(404);
    expect((await resend(`${deliveriesPath}/deliveries/${theirDelivery.id}/resend`)).status).toBe(404);
    // A form not sent from this session's pages.
    expect((await resend(`${deliveriesPath}/deliveries/${ours.id}/resend`, { _csrf: 'forged' })).status).toBe(
      403,
    );
    // The same person in a workspace where they have no developer access (changing webhooks needs it).
    const notDeveloper = await resend(
      `/console/${session.h.second.memberId}/webhooks/${endpoint.id}/deliveries/${ours.id}/resend`,
    );
    expect(notDeveloper.status).toBe(403);
    expect(notDeveloper.text).toContain('You cannot change webhooks in this workspace.');
    expect(await attemptJobs(ours.id)).toEqual([]);
    expect(await attemptJobs(theirDelivery.id)).toEqual([]);
  });
});
