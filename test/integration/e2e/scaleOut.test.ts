import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { revokeApiKey } from '../../../shared/db/queries/apiKeys.ts';
import { insertStatusSample } from '../../../shared/db/queries/statusSamples.ts';
import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { mockReply, openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type Pgbouncer, pgbouncerSkipReason, startPgbouncer } from '../../helpers/pgbouncer.ts';
import { logLines, type Spawned, spawnNode } from '../../helpers/processes.ts';
import { quickFleetLivenessEnv } from '../../helpers/quickLiveness.ts';
import { readEvents } from '../../helpers/sse.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * The platform deployed as the Procfile runs it: two web and two worker processes on one
 * PostgreSQL and one S3 server (S3_ENDPOINT), nothing embedded. Their pools reach PostgreSQL through
 * PgBouncer in transaction mode with its default settings (DATABASE_URL, docs/pgbouncer.ini), what
 * needs a session goes direct (DATABASE_DIRECT_URL); the Procfile test covers DATABASE_URL direct.
 */
let t: TestContext;
let bouncer: Pgbouncer | undefined;
let mock: OpenAiMock;
let tenant: Tenant;
const processes: Spawned[] = [];
let webs: { origin: string; process: Spawned }[] = [];
let workers: Spawned[] = [];

beforeAll(async () => {
  mock = await startOpenAiMock();
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 100_000, rateLimitPerMinute: 10_000 });
  // Only where apt-get is unavailable (globalSetup said so once): the same fleet, direct.
  bouncer = pgbouncerSkipReason() ? undefined : await startPgbouncer(t.databaseUrl);
  const shared = {
    ...openaiEnv(mock),
    DATABASE_URL: bouncer ? bouncer.urlFor(t.databaseUrl) : t.databaseUrl,
    DATABASE_DIRECT_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    // A bucket the S3 server has never seen: the release makes it, as on a first deploy.
    S3_BUCKET: `${t.s3.bucket}-fleet`,
    DATABASE_POOL_SIZE: '5',
    WORKER_CONCURRENCY: '4',
    LOG_LEVEL: 'info',
    // Brain pages are written as soon as a task's reply ends, on whichever worker is free.
    BRAIN_SYNTHESIS_DEBOUNCE_MS: '0',
    // The killed worker's job is taken over sooner; the workers' SIGSTOP below stays under the limit.
    ...quickFleetLivenessEnv,
  };
  const release = spawnNode('db/release.ts', shared);
  const released = await release.exited;
  if (released.code !== 0 || !/S3 bucket '.*-fleet' at .* created/.test(release.output())) {
    throw new Error(`release did not create the bucket (exit ${released.code}):\n${release.output()}`);
  }
  const ports = [await freePort(), await freePort()];
  webs = ports.map((port) => ({
    origin: `http://127.0.0.1:${port}`,
    process: spawnNode('api/server.ts', {
      ...shared,
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}`,
    }),
  }));
  workers = [0, 1].map(() =>
    spawnNode('worker/main.ts', { ...shared, PUBLIC_BASE_URL: `http://127.0.0.1:${ports[0]}` }),
  );
  processes.push(...webs.map((w) => w.process), ...workers);
  await Promise.all([
    ...webs.map((w) => w.process.waitFor(/api listening/)),
    ...workers.map((w) => w.waitFor(/worker started/)),
  ]);
  // Nothing embedded: no process of the fleet started PostgreSQL or an S3 server of its own.
  const embedded = processes.filter((p) =>
    /"component":"postgres"|embedded S3 server listening/.test(p.output()),
  );
  if (embedded.length > 0) throw new Error(`a process started embedded services:\n${embedded[0]!.output()}`);
}, 120_000);

afterAll(async () => {
  for (const p of processes) await p.stop();
  await bouncer?.stop();
  await t.close();
  await mock.close();
});

const call = (origin: string, path: string, key: string, init: RequestInit = {}) =>
  fetch(`${origin}/api/pub/v1${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
  });

(pgbouncerSkipReason() ? describe.skip : describe)('the fleet behind PgBouncer', () => {
  it("opens every process's pool through PgBouncer", async () => {
    const database = new URL(t.databaseUrl).pathname.slice(1);
    const log = await bouncer!.log();
    // Each process logs in at least once for its pool (DATABASE_POOLER's default: transaction).
    expect(log.split(`login attempt: db=${database} `).length - 1).toBeGreaterThanOrEqual(processes.length);
    expect(log).not.toMatch(/unsupported startup parameter|prepared statement/);
  });
});

describe('two web and two worker processes on one PostgreSQL and one S3', () => {
  it('streams on web B the reply to a message sent to web A', async () => {
    const [a, b] = webs as [(typeof webs)[0], (typeof webs)[0]];
    const created = await call(a.origin, '/tasks', tenant.testKey, {
      method: 'POST',
      body: JSON.stringify({ input: 'First message.' }),
    });
    expect(created.status).toBe(202);
    const { task } = (await created.json()) as { task: { id: string } };
    // The stream on B starts from now; the first reply may already be in, the second cannot be.
    const controller = new AbortController();
    const stream = await call(b.origin, `/tasks/${task.id}/stream`, tenant.testKey, {
      signal: controller.signal,
    });
    expect(stream.status).toBe(200);
    const sent = await call(a.origin, `/tasks/${task.id}/messages`, tenant.testKey, {
      method: 'POST',
      body: JSON.stringify({ input: 'Second message.' }),
    });
    expect(sent.status).toBe(202);
    const events = await readEvents(stream, (event) => {
      if (event.event !== 'message') return false;
      return (JSON.parse(event.data) as { text: string }).text.includes('Second message.');
    });
    controller.abort();
    const reply = events.find((e) => e.event === 'message' && e.data.includes('Second message.'));
    expect(reply?.id).toEqual(expect.any(String));
  });

  it('holds one rate limit and one key revocation across both web processes', async () => {
    const limited = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
    await awayFromMinuteEdge();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      for (const web of webs) statuses.push((await call(web.origin, '/me', limited.testKey)).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);

    const key = await tenant.key();
    for (const web of webs) expect((await call(web.origin, '/me', key.secret)).status).toBe(200);
    await revokeApiKey(t.deps.pool, key.id, 'operator');
    // Each process hears auth:changed on its own LISTEN connection; both refuse the key.
    for (const web of webs) {
      let code: string | undefined;
      for (let i = 0; i < 100 && code !== 'api_key_revoked'; i++) {
        const res = await call(web.origin, '/me', key.secret);
        code =
          res.status === 200 ? undefined : ((await res.json()) as { error: { code: string } }).error.code;
        if (code !== 'api_key_revoked') await new Promise((r) => setTimeout(r, 50));
      }
      expect(code).toBe('api_key_revoked');
    }
  });

  it("finishes a killed worker's job on the other worker and bills it once", async () => {
    let release!: () => void;
    // The first worker to call the provider hangs there until it dies; the retry is answered at once.
    mock.queueChat({ kind: 'ok', after: new Promise<void>((resolve) => (release = resolve)) });
    const answer = call(webs[0]!.origin, '/text', tenant.liveKey, {
      method: 'POST',
      body: JSON.stringify({ prompt: 'Outlive a worker.' }),
    });
    await mock.nextRequest('/chat/completions');
    const holder = await t.deps.pool.one(sql.type(z.object({ job_id: z.string(), label: z.string() }))`
      select j.id as job_id, h.process_label as label
      from jobs j
      join graphile_worker.jobs q on q.id = j.queue_job_id
      join worker_heartbeats h on h.worker_id = q.locked_by
      where j.type = 'text.generate' and j.completed_at is null
    `);
    const pid = Number(holder.label.split(':').at(-1));
    const doomed = workers.find((w) => w.child.pid === pid)!;
    expect(doomed).toBeDefined();
    doomed.child.kill('SIGKILL');
    const res = await answer;
    release();
    expect(res.status).toBe(201);
    const body = (await res.json()) as { text: string; cost: { amount: number } };
    expect(body.text).toBe(mockReply('Outlive a worker.'));
    const metered = await t.deps.pool.any(sql.type(z.object({ cost_minor: z.number() }))`
      select cost_minor from metering_records where job_id = ${holder.job_id}
    `);
    expect(metered).toEqual([{ cost_minor: body.cost.amount }]);
    const holds = await t.deps.pool.anyFirst(sql.type(z.object({ status: z.string() }))`
      select h.status from credit_holds h join jobs j on j.hold_id = h.id where j.id = ${holder.job_id}
    `);
    expect(holds).toEqual(['settled']);
  }, 120_000);

  it('writes the brain pages of same-titled tasks finished at once on both workers, each its own slug', async () => {
    const created = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const res = await call(webs[i % 2]!.origin, '/tasks', tenant.testKey, {
          method: 'POST',
          body: JSON.stringify({ title: 'Fleet rota', input: `Who drives van ${i + 1} this week?` }),
        });
        expect(res.status).toBe(202);
        return ((await res.json()) as { task: { id: string } }).task.id;
      }),
    );
    const pages = await waitUntil(async () => {
      const rows = await t.deps.pool.any(sql.type(z.object({ slug: z.string() }))`
        select p.slug from brain_pages p join tasks k on k.id = p.source_task_id
        where k.id = any(${sql.array(created, 'text')}) and p.synthesized_through_seq = k.last_message_seq
      `);
      return rows.length === created.length ? rows : undefined;
    }, 60_000);
    expect(new Set(pages.map((p) => p.slug))).toEqual(
      new Set(['fleet-rota', ...Array.from({ length: 7 }, (_, i) => `fleet-rota-${i + 2}`)]),
    );
  }, 90_000);

  it('answers GET /status with the same snapshot from every web process', async () => {
    const read = async (origin: string) => {
      const res = await fetch(`${origin}/api/pub/v1/status`);
      expect(res.status).toBe(200);
      return res.json();
    };
    const first = await read(webs[0]!.origin);
    // A probe lands between the two reads: the second process still answers the fleet's snapshot.
    await insertStatusSample(t.deps.pool, 'ocr', 'outage', null);
    expect(await read(webs[1]!.origin)).toEqual(first);
  });

  it("shows on web B's GET /metrics the jobs queued through web A while the workers are stopped, and their drain", async () => {
    const [a, b] = webs as [(typeof webs)[0], (typeof webs)[0]];
    const queue = async () => {
      const res = await fetch(`${b.origin}/metrics`);
      expect(res.status).toBe(200);
      const metrics = parseMetrics(await res.text());
      return {
        queued: sampleValue(metrics, 'svc_jobs_queued', { lane: 'main', task: 'task__reply' }),
        latency: sampleValue(metrics, 'svc_job_queue_latency_seconds', { lane: 'main' }),
      };
    };
    // Stopped, not killed: the jobs wait behind them, then the same workers drain them.
    const alive = workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null);
    for (const worker of alive) worker.child.kill('SIGSTOP');
    try {
      for (let i = 0; i < 3; i++) {
        const res = await call(a.origin, '/tasks', tenant.testKey, {
          method: 'POST',
          body: JSON.stringify({ input: `Wait in line ${i + 1}.` }),
        });
        expect(res.status).toBe(202);
      }
      // Web B reads the fleet's queue from PostgreSQL, cached up to 5 s.
      const waiting = await waitUntil(
        async () => {
          const seen = await queue();
          return seen.queued >= 3 && seen.latency > 0 ? seen : undefined;
        },
        15_000,
        250,
      );
      expect(waiting.latency).toBeGreaterThan(0);
    } finally {
      for (const worker of alive) worker.child.kill('SIGCONT');
    }
    const drained = await waitUntil(
      async () => {
        const seen = await queue();
        return seen.queued === 0 && seen.latency === 0 ? seen : undefined;
      },
      30_000,
      250,
    );
    expect(drained).toEqual({ queued: 0, latency: 0 });
  }, 60_000);

  // Last: the whole run, the killed worker's last words and every process's shutdown included.
  it('no process logged at error level over the run', async () => {
    for (const p of processes) await p.stop();
    const errors = processes.flatMap((p) =>
      logLines(p.output())
        .filter((line) => typeof line.level === 'number' && line.level >= 50)
        .map((line) => `${String(line.name)} ${String(line.pid)}: ${String(line.msg)}`),
    );
    expect(errors).toEqual([]);
  });
});
