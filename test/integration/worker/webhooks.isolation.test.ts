import http from 'node:http';
import type { Socket } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertWebhookEndpoint, listEndpointDeliveries } from '../../../shared/db/queries/webhooks.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { newWebhookSecret } from '../../../shared/webhooks/signing.ts';
import { startWorker, type WorkerHandle } from '../../../worker/startWorker.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * Webhook deliveries on their own runner, one at a time per endpoint, against the production worker
 * (its three runners) and real receivers on loopback: a receiver that never answers holds one
 * delivery for the whole 15 s deadline while a billed POST /images and another workspace's webhook
 * go through. The order is read from the database (job and attempt timestamps), after the fact.
 */
type Receiver = {
  url: string;
  received: number;
  open: number;
  maxOpen: number;
  close(): Promise<void>;
};

async function receiver(answer: 'hang' | 204): Promise<Receiver> {
  const sockets = new Set<Socket>();
  const state = { received: 0, open: 0, maxOpen: 0 };
  const server = http.createServer((req, res) => {
    state.received += 1;
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    req.socket.once('close', () => (state.open -= 1));
    req.resume();
    if (answer !== 'hang') req.on('end', () => res.writeHead(answer).end());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/hooks`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  });
}

let t: TestContext;
let slowTenant: Tenant;
let otherTenant: Tenant;
let worker: WorkerHandle | undefined;
const receivers: Receiver[] = [];

beforeAll(async () => {
  // Two slots for billed work, two for webhooks: an unbounded endpoint would take all of either.
  t = await setupTestContext({
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WORKER_CONCURRENCY: '2',
    WEBHOOK_CONCURRENCY: '2',
  });
  slowTenant = await createTenant(t.deps.pool);
  otherTenant = await createTenant(t.deps.pool, { credits: 1000 });
  worker = await startWorker(
    t.config,
    { databaseUrl: t.databaseUrl, s3: t.s3 },
    createLogger('silent', 'test'),
  );
});
afterAll(async () => {
  await worker?.stop();
  for (const r of receivers) await r.close();
  await t.close();
});

async function endpointFor(tenant: Tenant, answer: 'hang' | 204) {
  const target = await receiver(answer);
  receivers.push(target);
  const endpoint = await insertWebhookEndpoint(t.deps.pool, {
    id: newId('wh'),
    workspaceId: tenant.workspaceId,
    projectId: tenant.projectId,
    url: target.url,
    events: ['job.succeeded'],
    secret: newWebhookSecret(),
  });
  return { target, endpoint };
}

/** `count` job.succeeded events of `tenant`, each fanned out to its endpoints in the same transaction. */
function announce(tenant: Tenant, count: number) {
  return t.deps.pool.transaction(async (tx) => {
    for (let i = 0; i < count; i++) {
      await recordEvent(tx, {
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        type: 'job.succeeded',
        data: { job: { id: newId('job'), type: 'ocr.extract', status: 'succeeded', result: null } },
      });
    }
  });
}

const ms = z.object({ ms: z.number() });

/** When an endpoint's first delivery attempt was recorded (its outcome known), in epoch ms. */
const firstAttemptAt = (endpointId: string) =>
  t.deps.pool.maybeOneFirst(sql.type(ms)`
    select (extract(epoch from min(a.created_at)) * 1000)::float8 as ms
    from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
    where d.endpoint_id = ${endpointId}
    having count(*) > 0
  `);

describe('webhook deliveries on their own bounded runner', () => {
  it('a receiver hanging until the deadline delays neither billed work nor another workspace’s webhooks', async () => {
    const hanging = await endpointFor(slowTenant, 'hang');
    const quick = await endpointFor(otherTenant, 204);
    // More deliveries to the hanging endpoint than either runner has slots.
    await announce(slowTenant, 6);
    await waitUntil(async () => (hanging.target.open >= 1 ? true : undefined));

    await postAs(t.http, otherTenant.liveKey, '/images').send({ prompt: 'A lighthouse at dusk' }).expect(201);
    await announce(otherTenant, 1);
    await waitUntil(async () => {
      const [delivery] = await listEndpointDeliveries(t.deps.pool, quick.endpoint.id, 10);
      return delivery?.status === 'succeeded' ? true : undefined;
    }, 40_000);

    // The hanging endpoint's first attempt ends at its 15 s deadline; everything else came before.
    const hangEnded = await waitUntil(
      () => firstAttemptAt(hanging.endpoint.id).then((v) => v ?? undefined),
      40_000,
      200,
    );
    const imageDone = await t.deps.pool.oneFirst(sql.type(ms)`
      select (extract(epoch from completed_at) * 1000)::float8 as ms from jobs
      where workspace_id = ${otherTenant.workspaceId} and type = 'images.generate'
    `);
    expect(imageDone).toBeLessThan(hangEnded);
    expect(await firstAttemptAt(quick.endpoint.id)).toBeLessThan(hangEnded);
    const attempts = await t.deps.pool.anyFirst(sql.type(z.object({ error: z.string().nullable() }))`
      select a.error from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
      where d.endpoint_id = ${hanging.endpoint.id}
    `);
    expect(attempts).toEqual(['no answer within 15000 ms']);
    // One delivery at a time to the hanging endpoint, though two webhook slots were free for it.
    expect(hanging.target.received).toBeLessThanOrEqual(2);
    expect(hanging.target.maxOpen).toBe(1);
  }, 120_000);

  it('stopping the worker drains every runner: nothing stays locked, no heartbeat stays behind', async () => {
    // A delivery to the hanging endpoint is in flight on the webhook runner.
    await waitUntil(async () => (receivers[0]!.open === 1 ? true : undefined), 20_000);
    await worker!.stop();
    worker = undefined;
    const counts = await t.deps.pool.one(sql.type(z.object({ locked: z.number(), beating: z.number() }))`
      select (select count(*)::int from graphile_worker.jobs where locked_at is not null) as locked,
             (select count(*)::int from worker_heartbeats) as beating
    `);
    expect(counts).toEqual({ locked: 0, beating: 0 });
    // The interrupted attempt is not lost: its job waits for the next worker.
    const pending = await t.deps.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
      select count(*)::int from graphile_worker.jobs where task_identifier = 'webhook__deliver'
    `);
    expect(pending).toBeGreaterThan(0);
  });
});
