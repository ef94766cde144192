import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertEvent } from '../../../shared/db/queries/events.ts';
import {
  insertWebhookDeliveries,
  listDeliveryAttempts,
  listEndpointDeliveries,
  updateDelivery,
  updateWebhookEndpoint,
  type WebhookDeliveryRow,
} from '../../../shared/db/queries/webhooks.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { enqueueDeliveryAttempt } from '../../../shared/webhooks/fanout.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import { admin, type CliResult } from '../../helpers/cli.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { webhookReceiver } from '../../helpers/webhookReceiver.ts';
import { type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';

// `webhook resend` (issue 39) through the operator CLI, with the in-process worker delivering to
// receivers on loopback. One attempt per delivery (no retries): a 5xx fails a delivery at once.
let t: TestContext;
let tenant: Tenant;
let worker: StandaloneWorker;
const closers: (() => Promise<void>)[] = [];
const resentReason = /^resent by the operator at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

beforeAll(async () => {
  t = await setupTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  tenant = await createTenant(t.deps.pool);
  worker = await startStandaloneWorker(t, (ctx) => ({
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [], timeoutMs: 2000 }),
  }));
});
afterAll(async () => {
  await worker.stop();
  for (const close of closers) await close();
  await t.close();
});

const cli = (...args: string[]) => admin(['webhook', 'resend', ...args], { DATABASE_URL: t.databaseUrl });

/** An endpoint of `owner`'s project and its receiver; `answer` as webhookReceiver's. */
async function endpointWithReceiver(
  answer: (r: { id: string; body: string; seen: number }) => number,
  owner: Tenant = tenant,
) {
  const signing = { secret: '' };
  const receiver = await webhookReceiver(() => signing.secret, answer);
  closers.push(() => receiver.server.close());
  const endpoint = await addWebhookEndpoint(
    t.deps.pool,
    { workspaceId: owner.workspaceId, projectId: owner.projectId },
    receiver.url,
    ['job.failed'],
  );
  signing.secret = endpoint.secret;
  return { endpoint, receiver };
}

/** A job.failed event of `owner` (its own transaction): the event id, which is the `webhook-id`. */
const raise = (jobId: string, owner: Tenant = tenant) =>
  t.deps.pool.transaction((tx) =>
    recordEvent(tx, {
      workspaceId: owner.workspaceId,
      projectId: owner.projectId,
      type: 'job.failed',
      data: { job: { id: jobId } },
    }),
  );

/** The endpoint's delivery of `eventId` once it has ended as `status`. */
const settled = (endpointId: string, eventId: string, status: WebhookDeliveryRow['status']) =>
  waitUntil(async () => {
    const rows = await listEndpointDeliveries(t.deps.pool, endpointId, 100);
    const row = rows.find((d) => d.event_id === eventId);
    return row?.status === status ? row : undefined;
  });

/** The jobs queued for a delivery's attempts (graphile-worker's keys webhook:<delivery>:<attempt>). */
const attemptJobs = (deliveryId: string) =>
  t.deps.pool.any(sql.type(z.object({ key: z.string(), due: z.boolean() }))`
    select key, run_at <= now() as due from graphile_worker.jobs where key like ${`webhook:${deliveryId}:%`}
  `);

const printed = (r: CliResult) =>
  r.stdout as { resent: { id: string; attempt: number; was: string }[]; next?: string | null };

/** The answer: a job whose id starts with "ok" is taken at once; others fail the first time. */
const failFirst = ({ body, seen }: { body: string; seen: number }) =>
  (JSON.parse(body) as { data: { job: { id: string } } }).data.job.id.startsWith('ok') || seen > 0
    ? 204
    : 500;

describe('webhook resend', () => {
  it('resends one delivery: the same webhook-id and body again, signed, logged with who and when, metered nowhere', async () => {
    const { endpoint, receiver } = await endpointWithReceiver(failFirst);
    const eventId = await raise('job_once');
    const failed = await settled(endpoint.id, eventId, 'failed');

    // As operators run it: a process of its own.
    const result = await admin(
      ['webhook', 'resend', '--webhook', endpoint.id, '--delivery', failed.id],
      { DATABASE_URL: t.databaseUrl },
      { process: true },
    );
    expect(result).toMatchObject({ code: 0, stderr: null });
    expect(result.stdout).toEqual({ resent: [{ id: failed.id, attempt: 2, was: 'failed' }] });

    const delivered = await settled(endpoint.id, eventId, 'succeeded');
    expect(delivered.attempts).toBe(2);
    const copies = receiver.of(eventId);
    expect(copies.map((c) => c.status)).toEqual([500, 204]);
    expect(copies[1]!.body).toBe(copies[0]!.body);
    expect(copies.every((c) => c.valid)).toBe(true);
    const attempts = await listDeliveryAttempts(t.deps.pool, failed.id);
    expect(attempts.map((a) => [a.attempt, a.status_code])).toEqual([
      [1, 500],
      [2, 204],
    ]);
    expect(attempts[0]!.reason).toBeNull();
    expect(attempts[1]!.reason).toMatch(resentReason);

    // A delivery that succeeded can be sent again too (Stripe's "resend" of any event).
    expect(printed(await cli('--webhook', endpoint.id, '--delivery', failed.id)).resent).toEqual([
      { id: failed.id, attempt: 3, was: 'succeeded' },
    ]);
    await waitUntil(async () => (receiver.of(eventId).length === 3 ? true : undefined));
    await waitUntil(async () =>
      (await listDeliveryAttempts(t.deps.pool, failed.id)).length === 3 ? true : undefined,
    );

    // `webhook deliveries` prints the reason with the attempt.
    const log = await admin(['webhook', 'deliveries', '--webhook', endpoint.id], {
      DATABASE_URL: t.databaseUrl,
    });
    const logged = (log.stdout as { deliveries: { attempts: { attempt: number; reason?: string }[] }[] })
      .deliveries[0]!.attempts;
    expect(logged.map((a) => a.reason ?? null)).toEqual([
      null,
      expect.stringMatching(resentReason),
      expect.stringMatching(resentReason),
    ]);
    const metered = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from metering_records where workspace_id = ${tenant.workspaceId}
    `);
    expect(metered).toBe(0);
  });

  it('resends only the failed deliveries created since a time, oldest first', async () => {
    const { endpoint, receiver } = await endpointWithReceiver(failFirst);
    const before = await raise('job_before');
    const beforeDelivery = await settled(endpoint.id, before, 'failed');
    const first = await raise('job_first');
    const firstDelivery = await settled(endpoint.id, first, 'failed');
    const took = await raise('ok_taken');
    await settled(endpoint.id, took, 'succeeded');
    const second = await raise('job_second');
    const secondDelivery = await settled(endpoint.id, second, 'failed');

    const result = await cli('--webhook', endpoint.id, '--since', firstDelivery.created_at);
    expect(result.code).toBe(0);
    expect(result.stdout).toEqual({
      resent: [
        { id: firstDelivery.id, attempt: 2, was: 'failed' },
        { id: secondDelivery.id, attempt: 2, was: 'failed' },
      ],
      next: null,
    });
    // The one before the time was not touched: still failed, nothing queued for it.
    const rows = await listEndpointDeliveries(t.deps.pool, endpoint.id, 10);
    expect(rows.find((d) => d.id === beforeDelivery.id)).toMatchObject({ status: 'failed', attempts: 1 });
    expect(await attemptJobs(beforeDelivery.id)).toEqual([]);

    await settled(endpoint.id, first, 'succeeded');
    await settled(endpoint.id, second, 'succeeded');
    expect(receiver.of(first).map((c) => c.status)).toEqual([500, 204]);
    expect(receiver.of(second).map((c) => c.status)).toEqual([500, 204]);
    expect(receiver.of(took)).toHaveLength(1);
    expect(receiver.of(before)).toHaveLength(1);
    expect(receiver.received.every((c) => c.valid)).toBe(true);
    for (const id of [firstDelivery.id, secondDelivery.id]) {
      expect((await listDeliveryAttempts(t.deps.pool, id))[1]!.reason).toMatch(resentReason);
    }
  });

  it('brings a pending delivery waiting on backoff forward instead of sending it twice', async () => {
    const { endpoint, receiver } = await endpointWithReceiver(() => 204);
    // A delivery whose first attempt failed and whose second is an hour away, written in one
    // transaction so no worker makes the first attempt.
    const deliveryId = newId('whd');
    const eventId = newId('evt');
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    await t.deps.pool.transaction(async (tx) => {
      await insertEvent(tx, eventId, {
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        type: 'job.failed',
        data: { job: { id: 'job_held' } },
      });
      await insertWebhookDeliveries(tx, [
        { id: deliveryId, workspaceId: tenant.workspaceId, endpointId: endpoint.id, eventId },
      ]);
      await updateDelivery(tx, {
        id: deliveryId,
        status: 'pending',
        attempts: 1,
        lastStatusCode: 503,
        lastError: 'HTTP 503',
        nextAttemptAt: inAnHour,
      });
      await enqueueDeliveryAttempt(
        tx,
        { deliveryId, attempt: 2 },
        { endpointId: endpoint.id, runAt: inAnHour },
      );
    });

    const result = await cli('--webhook', endpoint.id, '--delivery', deliveryId);
    expect(result.stdout).toEqual({ resent: [{ id: deliveryId, attempt: 2, was: 'pending' }] });
    await settled(endpoint.id, eventId, 'succeeded');
    // The attempt's one job was moved, not doubled: it ran once, and none is left.
    await waitUntil(async () => ((await attemptJobs(deliveryId)).length === 0 ? true : undefined));
    expect(receiver.of(eventId)).toHaveLength(1);
    expect(receiver.of(eventId)[0]!.valid).toBe(true);
    const attempts = await listDeliveryAttempts(t.deps.pool, deliveryId);
    expect(attempts).toEqual([
      expect.objectContaining({ attempt: 2, status_code: 204, reason: expect.stringMatching(resentReason) }),
    ]);
  });

  it("refuses bad input in the CLI's error shape: flags, times, unknown or another workspace's delivery", async () => {
    const { endpoint } = await endpointWithReceiver(() => 500);
    const ours = await settled(endpoint.id, await raise('job_ours'), 'failed');
    const other = await createTenant(t.deps.pool);
    const theirs = await endpointWithReceiver(() => 500, other);
    const theirDelivery = await settled(theirs.endpoint.id, await raise('job_theirs', other), 'failed');

    const refused = async (args: string[], code: string, message: RegExp) => {
      const r = await cli(...args);
      expect({ args, code: r.code, stdout: r.stdout, stderr: r.stderr }).toEqual({
        args,
        code: 1,
        stdout: null,
        stderr: { error: { code, message: expect.stringMatching(message) } },
      });
    };
    const exactlyOne = /exactly one of --delivery D and --since ISO/;
    await refused(['--webhook', endpoint.id], 'invalid_arguments', exactlyOne);
    await refused(
      ['--webhook', endpoint.id, '--delivery', ours.id, '--since', '2026-01-01'],
      'invalid_arguments',
      exactlyOne,
    );
    await refused(['--delivery', ours.id], 'invalid_arguments', /--webhook/);
    for (const since of ['yesterday', '2026-02-30', '2026-11-29T25:00', '1732868400']) {
      await refused(
        ['--webhook', endpoint.id, '--since', since],
        'invalid_arguments',
        /--since must be an ISO 8601/,
      );
    }
    await refused(['--webhook', endpoint.id, '--delivery', 'whd_nope'], 'not_found', /no delivery whd_nope/);
    await refused(
      ['--webhook', 'wh_nope', '--delivery', ours.id],
      'not_found',
      /no webhook endpoint wh_nope/,
    );
    // Another workspace's delivery, named under our endpoint: not found, and left as it was.
    await refused(['--webhook', endpoint.id, '--delivery', theirDelivery.id], 'not_found', /no delivery/);
    expect(await attemptJobs(theirDelivery.id)).toEqual([]);
    // A disabled endpoint sends nothing: enable it first.
    await updateWebhookEndpoint(t.deps.pool, endpoint.id, tenant.workspaceId, { enabled: false });
    await refused(['--webhook', endpoint.id, '--delivery', ours.id], 'conflict', /disabled/);
    expect(await attemptJobs(ours.id)).toEqual([]);
  });

  it('resends at most 100 failed deliveries a call and says where the rest begin', async () => {
    const { endpoint } = await endpointWithReceiver(() => 204);
    // 101 failed deliveries written directly (no attempt jobs), a millisecond apart, oldest first.
    const ids = Array.from({ length: 101 }, () => newId('whd'));
    await t.deps.pool.transaction(async (tx) => {
      for (const [n, id] of ids.entries()) {
        const eventId = newId('evt');
        await insertEvent(tx, eventId, {
          workspaceId: tenant.workspaceId,
          projectId: tenant.projectId,
          type: 'job.failed',
          data: { n },
        });
        await insertWebhookDeliveries(tx, [
          { id, workspaceId: tenant.workspaceId, endpointId: endpoint.id, eventId },
        ]);
        await updateDelivery(tx, {
          id,
          status: 'failed',
          attempts: 8,
          lastStatusCode: 500,
          lastError: 'HTTP 500',
          nextAttemptAt: null,
        });
        await tx.query(sql.typeAlias('void')`
          update webhook_deliveries set created_at = now() - interval '1 hour' + ${n} * interval '1 millisecond' where id = ${id}
        `);
      }
    });
    const since = new Date(Date.now() - 2 * 3_600_000).toISOString();
    const first = printed(await cli('--webhook', endpoint.id, '--since', since));
    expect(first.resent.map((r) => r.id)).toEqual(ids.slice(0, 100));
    expect(first.resent.every((r) => r.attempt === 9 && r.was === 'failed')).toBe(true);
    const last = (await listEndpointDeliveries(t.deps.pool, endpoint.id, 1))[0]!;
    expect(last.id).toBe(ids[100]);
    expect(first.next).toBe(last.created_at);
    const rest = printed(await cli('--webhook', endpoint.id, '--since', first.next!));
    expect(rest).toEqual({ resent: [{ id: ids[100], attempt: 9, was: 'failed' }], next: null });
  });
});
