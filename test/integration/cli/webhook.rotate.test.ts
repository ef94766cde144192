import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { expireOldWebhookSecret, rotateWebhookSecret } from '../../../shared/webhooks/rotation.ts';
import { sendTestEvent } from '../../../shared/webhooks/testEvent.ts';
import { admin } from '../../helpers/cli.ts';
import type { TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Spawned, spawnNode } from '../../helpers/processes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { type Received, verdict, webhookReceiver } from '../../helpers/webhookReceiver.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

// `webhook rotate` (issue 38) end to end: the operator CLI rotates, a worker process of its own
// delivers to a receiver on loopback, and the standardwebhooks library (what receivers use) checks
// each delivery against the old and the new secret: either verifies during the overlap, only the
// new one after it.
let t: TestContext;
let tenant: Tenant;
let worker: Spawned;
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } }));
  receiver = await webhookReceiver(
    () => 'whsec_AAAA',
    () => 204,
  );
  worker = spawnNode('worker/main.ts', {
    DATABASE_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    S3_BUCKET: t.s3.bucket,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WORKER_CONCURRENCY: '2',
    LOG_LEVEL: 'debug',
  });
  await worker.waitFor(/worker started/, 120_000);
}, 180_000);
afterAll(async () => {
  await worker?.stop();
  await receiver?.server.close();
  await t?.close();
});

const env = () => ({ DATABASE_URL: t.databaseUrl });
type Rotated = { webhook: { id: string; secret: string; previousSecretUntil: string | null } };

const deliver = async (endpointId: string, jobId: string): Promise<Received> => {
  const eventId = await t.deps.pool.transaction((tx) =>
    recordEvent(tx, {
      workspaceId: tenant.workspaceId,
      projectId: tenant.projectId,
      type: 'job.succeeded',
      data: { job: { id: jobId } },
    }),
  );
  return waitUntil(async () => receiver.of(eventId)[0], 30_000);
};

describe('admin webhook rotate', () => {
  it('prints the new secret once; deliveries verify with either secret during the overlap, then only the new one', async () => {
    const endpoint = await addWebhookEndpoint(t.deps.pool, tenant, receiver.url, ['job.succeeded']);
    const first = await deliver(endpoint.id, 'job_before');
    expect(first.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(verdict(first, endpoint.secret)).toBe('verified');

    const rotatedAt = Date.now();
    const out = await admin(['webhook', 'rotate', '--webhook', endpoint.id, '--overlap', '3600'], env());
    expect(out).toMatchObject({ code: 0, stderr: null });
    const { webhook: rotated } = out.stdout as Rotated;
    expect(rotated.id).toBe(endpoint.id);
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(endpoint.secret);
    const until = Date.parse(rotated.previousSecretUntil!);
    expect(until).toBeGreaterThanOrEqual(rotatedAt + 3_600_000 - 2000);
    expect(until).toBeLessThanOrEqual(Date.now() + 3_600_000 + 2000);

    const during = await deliver(endpoint.id, 'job_during');
    expect(during.headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(verdict(during, endpoint.secret)).toBe('verified');
    expect(verdict(during, rotated.secret)).toBe('verified');

    // Rotated again with a one-second overlap: the first secret is gone at once, the second
    // signs until its overlap ends on the database's clock, then only the third.
    const again = (
      (await admin(['webhook', 'rotate', '--webhook', endpoint.id, '--overlap', '1'], env()))
        .stdout as Rotated
    ).webhook;
    await waitUntil(async () =>
      (await t.deps.pool.oneFirst(sql.type(z.object({ over: z.boolean() }))`
        select now() > ${again.previousSecretUntil}::timestamptz as over
      `))
        ? true
        : undefined,
    );
    const after = await deliver(endpoint.id, 'job_after');
    expect(after.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(verdict(after, again.secret)).toBe('verified');
    expect(verdict(after, rotated.secret)).toBe('No matching signature found');
    expect(verdict(after, endpoint.secret)).toBe('No matching signature found');

    // No secret reaches the worker's log, debug lines included.
    const logged = worker.output();
    expect(logged).toContain('webhook');
    for (const secret of [endpoint.secret, rotated.secret, again.secret]) {
      expect(logged).not.toContain(secret.slice(6));
    }
  }, 90_000);

  it('--overlap 0 drops the old secret at once; refuses overlaps past 7 days and unknown endpoints', async () => {
    const endpoint = await addWebhookEndpoint(t.deps.pool, tenant, receiver.url, ['job.failed']);
    const out = await admin(['webhook', 'rotate', '--webhook', endpoint.id, '--overlap', '0'], env());
    expect((out.stdout as Rotated).webhook.previousSecretUntil).toBeNull();
    const byDefault = await admin(['webhook', 'rotate', '--webhook', endpoint.id], env());
    const until = Date.parse((byDefault.stdout as Rotated).webhook.previousSecretUntil!);
    expect(Math.round((until - Date.now()) / 3_600_000)).toBe(24);

    const code = async (values: Record<string, string>) => {
      const run = await admin(
        ['webhook', 'rotate', ...Object.entries(values).flatMap(([k, v]) => [`--${k}`, v])],
        env(),
      );
      return run.code === 0 ? 'ok' : (run.stderr as { error: { code: string } }).error.code;
    };
    expect(await code({ webhook: endpoint.id, overlap: '604801' })).toBe('invalid_arguments');
    expect(await code({ webhook: endpoint.id, overlap: '-1' })).toBe('invalid_arguments');
    expect(await code({ webhook: 'wh_nope' })).toBe('not_found');
    expect(await code({ overlap: '60' })).toBe('invalid_arguments');
    expect(await code({ webhook: endpoint.id, overlap: '604800' })).toBe('ok');
    expect(commands['webhook rotate']!.flags).toHaveProperty('overlap');
  });

  it('the console’s calls (rotate, expire, test event) reach only their own workspace’s endpoints', async () => {
    const endpoint = await addWebhookEndpoint(t.deps.pool, tenant, receiver.url, ['job.failed']);
    const other = await createTenant(t.deps.pool);
    const asOther = { endpointId: endpoint.id, workspaceId: other.workspaceId };
    expect(await rotateWebhookSecret(t.deps.pool, asOther)).toEqual({
      problem: { code: 'not_found', message: `no webhook endpoint ${endpoint.id}` },
    });
    expect(await expireOldWebhookSecret(t.deps.pool, endpoint.id, other.workspaceId)).toBeNull();
    expect(await sendTestEvent(t.deps.pool, { ...asOther, from: 'console' })).toMatchObject({
      problem: { code: 'not_found' },
    });
    const secret = await t.deps.pool.oneFirst(sql.type(z.object({ secret: z.string() }))`
      select secret from webhook_endpoints where id = ${endpoint.id}
    `);
    expect(secret).toBe(endpoint.secret);
  });
});
