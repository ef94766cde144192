import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import { sql } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { verifyWebhook } from '../../../shared/webhooks/signing.ts';
import { setupTestContext, type TestContext, testEnv } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Spawned, spawnNode } from '../../helpers/processes.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { createTask, waitUntil } from '../api/tasks.helpers.ts';

/**
 * Issue 33's fourth fault with issue 39's catch-up: two worker processes deliver to receivers on
 * loopback, one refusing connections and one answering 503 for the minute while tasks are
 * created and replied to, then both come back. Every event arrives once per endpoint, signed; the
 * held deliveries are brought forward by the first 2xx after the outage and arrive within seconds
 * of it, one at a time, instead of each waiting out its 5-minute backoff. A third endpoint, up
 * throughout, keeps receiving during the outage. The 30 s outage with 50 events runs in the same
 * window, on an endpoint of a second workspace (its events are its own), so the file takes a minute.
 */
const outageMs = 60_000;
const taskEveryMs = 3_000;

type Arrival = { id: string; at: number; status: number; valid: boolean };

/** A receiver that is `up` (204), answers 503, or is `down` (its port closed: connections refused). */
async function receiver(secret: () => string) {
  const state = { mode: 'up' as 'up' | '503' | 'down', open: 0, maxOpen: 0, arrivals: [] as Arrival[] };
  const server = http.createServer((req, res) => {
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    res.once('close', () => (state.open -= 1));
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const id = req.headers['webhook-id'] as string;
      const headers = {
        id,
        timestamp: req.headers['webhook-timestamp'] as string,
        signature: req.headers['webhook-signature'] as string,
      };
      const status = state.mode === 'up' ? 204 : 503;
      state.arrivals.push({ id, at: Date.now(), status, valid: verifyWebhook(secret(), headers, body) });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}/hooks`,
    delivered: () => state.arrivals.filter((a) => a.status === 204),
    down: async () => {
      state.mode = 'down';
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
    up: async () => {
      if (state.mode === 'down') {
        await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      }
      state.mode = 'up';
    },
    close: async () => {
      if (state.mode === 'down') return;
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  });
}
type Receiver = Awaited<ReturnType<typeof receiver>>;

let t: TestContext;
let tenant: Tenant;
/** The 30 s outage's workspace: none of the minute's events reach its endpoint, nor its events theirs. */
let other: Tenant;
const workers: Spawned[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  t = await setupTestContext({ WEBHOOK_ALLOW_PRIVATE: 'true' });
  tenant = await createTenant(t.deps.pool);
  other = await createTenant(t.deps.pool);
  // Two worker processes as the Procfile runs them, with the default retry schedule (5 s, 5 min, …).
  const env = testEnv({
    DATABASE_URL: t.databaseUrl,
    S3_BUCKET: t.s3.bucket,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    LOG_LEVEL: 'info',
  });
  workers.push(spawnNode('worker/main.ts', env), spawnNode('worker/main.ts', env));
  await Promise.all(workers.map((w) => w.waitFor(/worker started/, 120_000)));
}, 150_000);

afterAll(async () => {
  for (const w of workers) await w.stop();
  for (const r of receivers) await r.close();
  await t.close();
});

async function endpoint(owner = tenant) {
  let secret = '';
  const target = await receiver(() => secret);
  receivers.push(target);
  const row = await addWebhookEndpoint(t.deps.pool, owner, target.url, ['task.message.created']);
  secret = row.secret;
  return { target, id: row.id };
}

const eventIds = () =>
  t.deps.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    select id from events where workspace_id = ${tenant.workspaceId} and type = 'task.message.created'
  `);

const attemptRow = z.object({ created: z.number(), at: z.number(), reason: z.string().nullable() });

/** An endpoint's attempts in the order they were made, with their delivery's creation time. */
const attemptsOf = (endpointId: string) =>
  t.deps.pool.any(sql.type(attemptRow)`
    select (extract(epoch from d.created_at) * 1000)::float8 as created,
           (extract(epoch from a.created_at) * 1000)::float8 as at, a.reason
    from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
    where d.endpoint_id = ${endpointId}
    order by a.created_at, a.id
  `);

describe('a webhook receiver down for a minute', () => {
  it.concurrent(
    'every event arrives once per endpoint, the held ones within seconds of the first success after',
    async () => {
      const refusing = await endpoint();
      const failing = await endpoint();
      const healthy = await endpoint();
      await refusing.target.down();
      failing.target.mode = '503';
      const outageStarted = Date.now();
      const tasks: string[] = [];
      for (let n = 0; Date.now() - outageStarted < outageMs; n++) {
        tasks.push(await createTask(t, tenant.testKey, { input: `During the outage ${n}.` }));
        const next = outageStarted + (n + 1) * taskEveryMs;
        await new Promise((r) =>
          setTimeout(r, Math.max(0, Math.min(next, outageStarted + outageMs) - Date.now())),
        );
      }
      // Nothing reached the two receivers that were out; the healthy one kept receiving meanwhile.
      const healthyDuringOutage = healthy.target.delivered().length;
      expect(refusing.target.arrivals).toEqual([]);
      expect(failing.target.delivered()).toEqual([]);
      expect(healthyDuringOutage).toBeGreaterThan(tasks.length);

      await refusing.target.up();
      await failing.target.up();
      const recoveredAt = Date.now();
      // Traffic goes on: one more task, whose events are the first the receivers can take.
      tasks.push(await createTask(t, tenant.testKey, { input: 'After the outage.' }));
      const expected = await waitUntil(async () => {
        const ids = await eventIds();
        return ids.length === tasks.length * 2 ? new Set(ids) : undefined;
      }, 30_000);

      const figures: string[] = [`events raised ${expected.size} (${tasks.length} tasks)`];
      for (const [name, target, endpointId] of [
        ['refusing connections', refusing.target, refusing.id],
        ['answering 503', failing.target, failing.id],
        ['up throughout', healthy.target, healthy.id],
      ] as const) {
        // Within a minute, where waiting out the backoff would take five.
        await waitUntil(
          async () => (new Set(target.delivered().map((a) => a.id)).size >= expected.size ? true : undefined),
          60_000,
          100,
        );
        const delivered = target.delivered();
        const ids = delivered.map((a) => a.id);
        expect(new Set(ids)).toEqual(expected);
        expect(ids).toHaveLength(expected.size); // no duplicates
        expect(target.arrivals.every((a) => a.valid)).toBe(true);
        expect(target.maxOpen).toBe(1); // one at a time, catch-up included
        const afterRecovery = delivered.filter((a) => a.at >= recoveredAt);
        const firstSuccess = Math.min(...afterRecovery.map((a) => a.at));
        const last = Math.max(...delivered.map((a) => a.at));
        const attempts = await attemptsOf(endpointId);
        const early = attempts.filter((a) => a.reason !== null);
        figures.push(
          `${name}: arrived ${ids.length}, duplicates ${ids.length - new Set(ids).size}, ` +
            `requests ${target.arrivals.length}, attempts caught up ${early.length}, ` +
            `first success ${afterRecovery.length > 0 ? firstSuccess - recoveredAt : '-'} ms after recovery, ` +
            `last arrival ${last - recoveredAt} ms after recovery` +
            (afterRecovery.length > 0 ? ` (${last - firstSuccess} ms after the first success)` : ''),
        );
        if (target === healthy.target) continue;
        expect(last - firstSuccess).toBeLessThan(10_000);
        expect(early.length).toBeGreaterThan(0);
        for (const a of early) {
          expect(a.reason).toMatch(
            /^caught up: the endpoint answered 204 to whd_\S+ at \S+ after failures; this attempt was due at \S+$/,
          );
        }
        // Brought forward oldest first.
        const order = early.map((a) => a.created);
        expect(order).toEqual([...order].sort((x, y) => x - y));
      }
      process.stderr.write(`webhook outage figures:\n${figures.join('\n')}\n`);

      // Operators read why an attempt ran early in `webhook deliveries`.
      const log = (await commands['webhook deliveries']!.run(t.deps.pool, {
        webhook: failing.id,
        limit: '100',
      })) as {
        deliveries: { status: string; attempts: { statusCode: number | null; reason?: string }[] }[];
      };
      expect(log.deliveries.every((d) => d.status === 'succeeded')).toBe(true);
      const caughtUp = log.deliveries.flatMap((d) => d.attempts).filter((a) => a.reason !== undefined);
      expect(caughtUp.length).toBeGreaterThan(0);
      expect(caughtUp.every((a) => a.statusCode === 204 && a.reason!.startsWith('caught up: '))).toBe(true);
    },
    180_000,
  );

  it.concurrent(
    'down for 30 s with 50 events raised meanwhile: all 50 arrive within 10 s of its return, once each, signed',
    async () => {
      const down = await endpoint(other);
      await down.target.down();
      // Raised through the outage, as traffic comes: the last ones are still on their 5 s retry when
      // the receiver returns, and the first of those to succeed brings the rest forward.
      const started = Date.now();
      const raised = new Set<string>();
      for (let n = 0; n < 50; n++) {
        const data = { n };
        const id = await t.deps.pool.transaction((tx) =>
          recordEvent(tx, {
            workspaceId: other.workspaceId,
            projectId: other.projectId,
            type: 'task.message.created',
            data,
          }),
        );
        raised.add(id);
        await new Promise((r) => setTimeout(r, Math.max(0, started + ((n + 1) * 30_000) / 50 - Date.now())));
      }
      expect(down.target.arrivals).toEqual([]);
      await down.target.up();
      const backAt = Date.now();
      await waitUntil(async () => (down.target.delivered().length >= 50 ? true : undefined), 60_000, 50);
      const delivered = down.target.delivered();
      const lastMs = Math.max(...delivered.map((a) => a.at)) - backAt;
      process.stderr.write(
        `30 s outage, 50 events: the last arrived ${lastMs} ms after the receiver came back\n`,
      );
      expect(new Set(delivered.map((a) => a.id))).toEqual(raised);
      expect(delivered).toHaveLength(50);
      expect(down.target.arrivals.every((a) => a.valid)).toBe(true);
      expect(lastMs).toBeLessThan(10_000);
    },
    120_000,
  );
});
