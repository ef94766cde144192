import { createHmac } from 'node:crypto';
import type http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { listDeliveryAttempts, listEndpointDeliveries } from '../../../shared/db/queries/webhooks.ts';
import { verifyWebhook } from '../../../shared/webhooks/signing.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { taskReply } from '../../../worker/tasks/task__reply.ts';
import { webhookDeliver } from '../../../worker/tasks/webhook__deliver.ts';
import { admin } from '../../helpers/cli.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { createTask, type StandaloneWorker, startStandaloneWorker, waitUntil } from '../api/tasks.helpers.ts';

type Received = { headers: http.IncomingHttpHeaders; body: string; at: number };

const servers: LoopbackServer[] = [];

/** A webhook receiver on loopback whose answer is chosen per request. */
async function receiver(answer: (req: Received, n: number) => number | 'hang') {
  const received: Received[] = [];
  const server = await listenOnLoopback((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const entry = { headers: req.headers, body, at: Date.now() };
      received.push(entry);
      const status = answer(entry, received.length);
      if (status === 'hang') return; // never answers: the sender's deadline must end the attempt
      res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  servers.push(server);
  return { url: `${server.origin}/hooks`, port: server.port, received };
}

let t: TestContext;
let tenant: Tenant;
let worker: StandaloneWorker;

beforeAll(async () => {
  t = await setupTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  tenant = await createTenant(t.deps.pool);
  worker = await startStandaloneWorker(t, (ctx) => ({
    task__reply: jobTask(ctx, taskReply(ctx)),
    // Short retry delays and deadline so retries happen within the test.
    webhook__deliver: webhookDeliver(ctx, { retryDelaysMs: [300, 300], timeoutMs: 800 }),
  }));
});
afterAll(async () => {
  await worker.stop();
  for (const server of servers) await server.close();
  await t.close();
});

/** An endpoint row as `webhook create` writes it (the CLI process is exercised in the first test). */
async function createEndpoint(
  url: string,
  events: string,
  projectId: string,
  workspaceId = tenant.workspaceId,
) {
  return addWebhookEndpoint(t.deps.pool, { workspaceId, projectId }, url, events.split(','));
}

describe('webhook deliveries', () => {
  it('delivers task.message.created signed per Standard Webhooks, and retries after a 500', async () => {
    // Registered through the operator CLI process, as operators do.
    const seen = new Set<string>();
    const target = await receiver((req) => {
      const id = req.headers['webhook-id'] as string;
      if (seen.has(id)) return 204;
      seen.add(id);
      return 500; // every event's first attempt fails
    });
    const cli = await admin(
      [
        'webhook',
        'create',
        '--project',
        tenant.projectId,
        '--url',
        target.url,
        '--events',
        'task.message.created',
      ],
      {
        DATABASE_URL: t.databaseUrl,
        WEBHOOK_ALLOW_PRIVATE: 'true',
      },
    );
    expect(cli.code).toBe(0);
    const { id: endpointId, secret } = (cli.stdout as { webhook: { id: string; secret: string } }).webhook;
    // A second endpoint that only wants job.failed hears nothing about messages.
    const quiet = await receiver(() => 200);
    const quietEndpoint = await createEndpoint(quiet.url, 'job.failed', tenant.projectId);

    const taskId = await createTask(t, tenant.testKey, { input: 'Hook me.' });

    // user message + assistant reply, each: a 500, then (300 ms later) a success.
    await waitUntil(async () => (target.received.length >= 4 ? true : undefined), 15_000);
    const byId = Map.groupBy(target.received, (r) => r.headers['webhook-id'] as string);
    expect(byId.size).toBe(2);
    for (const [id, attempts] of byId) {
      expect(attempts).toHaveLength(2);
      for (const r of attempts) {
        expect(r.headers['content-type']).toBe('application/json');
        const timestamp = r.headers['webhook-timestamp'] as string;
        expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(30);
        // Recomputed independently of our signing code: base64 HMAC-SHA256 of "id.timestamp.body" keyed by the decoded secret.
        const expected = createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
          .update(`${id}.${timestamp}.${r.body}`)
          .digest('base64');
        expect(r.headers['webhook-signature']).toBe(`v1,${expected}`);
        expect(
          verifyWebhook(
            secret,
            { id, timestamp, signature: r.headers['webhook-signature'] as string },
            r.body,
          ),
        ).toBe(true);
        expect(
          verifyWebhook(
            secret,
            { id, timestamp, signature: r.headers['webhook-signature'] as string },
            `${r.body} `,
          ),
        ).toBe(false);
        const body = JSON.parse(r.body);
        expect(body).toEqual({
          id,
          type: 'task.message.created',
          createdAt: expect.any(String),
          data: {
            taskId,
            message: {
              id: expect.stringMatching(/^msg_/),
              role: expect.any(String),
              text: expect.any(String),
              createdAt: expect.any(String),
            },
          },
        });
      }
    }
    const roles = [...byId.values()].map((a) => JSON.parse(a[0]!.body).data.message.role).sort();
    expect(roles).toEqual(['assistant', 'user']);

    // The delivery log: two deliveries, each succeeded on attempt 2 after a 500.
    await waitUntil(async () => {
      const rows = await listEndpointDeliveries(t.deps.pool, endpointId, 10);
      return rows.length === 2 && rows.every((d) => d.status === 'succeeded') ? rows : undefined;
    });
    // Each retry waited out its 300 ms, unless the other's 2xx caught it up (its log says so).
    const retries = [];
    for (const delivery of await listEndpointDeliveries(t.deps.pool, endpointId, 10)) {
      expect(delivery).toMatchObject({ attempts: 2, last_status_code: 204, next_attempt_at: null });
      const attempts = await listDeliveryAttempts(t.deps.pool, delivery.id);
      expect(attempts.map((a) => [a.attempt, a.status_code, a.error])).toEqual([
        [1, 500, 'HTTP 500'],
        [2, 204, null],
      ]);
      const [first, second] = attempts as [(typeof attempts)[0], (typeof attempts)[0]];
      const gap = Date.parse(second.created_at) - Date.parse(first.created_at);
      retries.push(
        second.reason === null
          ? gap >= 250
            ? 'waited'
            : `early by ${250 - gap} ms`
          : /^caught up: the endpoint answered 204 to whd_/.test(second.reason)
            ? 'caught up'
            : second.reason,
      );
    }
    expect(retries).toContain('waited');
    expect(retries.filter((r) => r !== 'waited' && r !== 'caught up')).toEqual([]);
    // Deliveries are created in the transaction that records their event, and both events have
    // committed (delivered above): the endpoint that did not subscribe has none, so it can hear nothing.
    expect(await listEndpointDeliveries(t.deps.pool, quietEndpoint.id, 10)).toEqual([]);
    expect(quiet.received).toHaveLength(0);

    // Operators read the same log with `admin webhook deliveries --webhook <id>`.
    const log = (await commands['webhook deliveries']!.run(t.deps.pool, { webhook: endpointId })) as {
      deliveries: { status: string; attempts: { attempt: number; statusCode: number | null }[] }[];
    };
    expect(log.deliveries).toHaveLength(2);
    for (const d of log.deliveries) {
      expect(d.status).toBe('succeeded');
      expect(d.attempts.map((a) => a.statusCode)).toEqual([500, 204]);
    }
  });

  it('gives up after the last scheduled attempt when the target never answers in time', async () => {
    const other = await createTenant(t.deps.pool);
    const hanging = await receiver(() => 'hang');
    const endpoint = await createEndpoint(
      hanging.url,
      'task.message.created',
      other.projectId,
      other.workspaceId,
    );
    await postAs(t.http, other.testKey, '/tasks').send({ input: 'Nobody listens.' }).expect(202);
    const failed = await waitUntil(
      async () => {
        const rows = await listEndpointDeliveries(t.deps.pool, endpoint.id, 10);
        return rows.length === 2 && rows.every((d) => d.status === 'failed') ? rows : undefined;
      },
      20_000,
      100,
    );
    for (const delivery of failed) {
      expect(delivery).toMatchObject({
        attempts: 3,
        last_status_code: null,
        last_error: 'no answer within 800 ms',
        completed_at: expect.any(String),
      });
    }
  });

  it("only delivers a project's events to that project's endpoints", async () => {
    const target = await receiver(() => 200);
    const secondProject = await tenant.addProject('Elsewhere');
    const elsewhere = await createEndpoint(target.url, 'task.message.created', secondProject);
    // A marker endpoint of the task's own project: once it has both of the task's events, every
    // delivery those events will ever have exists (they are created with the event).
    const marker = await receiver(() => 200);
    const markerEndpoint = await createEndpoint(marker.url, 'task.message.created', tenant.projectId);
    const taskId = await createTask(t, tenant.testKey, { input: 'Main project only.' });
    const roles = await waitUntil(async () => {
      const bodies = marker.received.map(
        (r) => JSON.parse(r.body) as { data: { taskId: string; message: { role: string } } },
      );
      const ours = bodies.filter((b) => b.data.taskId === taskId).map((b) => b.data.message.role);
      return ours.length >= 2 ? ours.sort() : undefined;
    });
    expect(roles).toEqual(['assistant', 'user']);
    expect(await listEndpointDeliveries(t.deps.pool, markerEndpoint.id, 10)).toHaveLength(2);
    expect(await listEndpointDeliveries(t.deps.pool, elsewhere.id, 10)).toEqual([]);
    expect(target.received).toHaveLength(0);
  });
});
