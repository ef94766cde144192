import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type Spawned, spawnNode } from '../../helpers/processes.ts';
import { alphaThenBetaEnv } from '../../helpers/providerRoutes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * Two worker processes (as two worker dynos) behind one api, `alpha` first in the text route and
 * `beta` behind it. Which process takes a job is chosen by freezing the other one (SIGSTOP), so each
 * step shows one process acting on what the other recorded in PostgreSQL.
 */
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;
let workers: Spawned[] = [];
// The documented bound on how stale a process's view of the circuits may be (CircuitBreaker's cache).
const circuitCacheMs = 2000;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  // The cooldown outlasts the two calls made while the circuit is open, even on a machine loaded by
  // other test files' process fleets (with 3 s, one call there came after it had ended).
  const env = alphaThenBetaEnv(alpha, beta, { failures: 2, windowSeconds: 60, cooldownSeconds: 10 });
  ({ t, tenant } = await contextWithTenant({ env, credits: 1_000_000 }));
  const workerEnv = {
    ...env,
    DATABASE_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    S3_BUCKET: t.s3.bucket,
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
    DATABASE_POOL_SIZE: '3',
    // One job at a time each: a held job keeps its process busy, so the next job goes to the other.
    WORKER_CONCURRENCY: '1',
    LOG_LEVEL: 'info',
  };
  workers = [spawnNode('worker/main.ts', workerEnv), spawnNode('worker/main.ts', workerEnv)];
  await Promise.all(workers.map((w) => w.waitFor(/worker started/)));
}, 120_000);

afterAll(async () => {
  for (const w of workers) {
    w.child.kill('SIGCONT');
    await w.stop();
  }
  await t.close();
  await Promise.all([alpha.close(), beta.close()]);
});

/** Only `worker` takes jobs from now on: the other process is frozen until it is chosen again. */
function only(worker: Spawned) {
  for (const w of workers) w.child.kill(w === worker ? 'SIGCONT' : 'SIGSTOP');
}
function both() {
  for (const w of workers) w.child.kill('SIGCONT');
}

async function answeredBy(prompt: string): Promise<string> {
  const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt }).expect(201);
  return String(res.body.model).split('/')[0]!;
}

const circuitRow = z.object({ failures: z.number(), open_until: z.string().nullable() });
const circuit = () =>
  t.deps.pool.one(sql.type(circuitRow)`
    select failures, open_until from provider_circuits where provider = 'alpha'
  `);

describe('two worker processes share one circuit breaker', () => {
  it('counts failures across processes, skips an open provider everywhere, and lets one trial through', async () => {
    const [a, b] = workers as [Spawned, Spawned];
    // b reads the circuits while alpha is healthy, so its cached view says closed.
    only(b);
    expect(await answeredBy('warm b')).toBe('alpha');

    // One failure recorded by a, the second by b: the count lives in PostgreSQL, not in a process.
    only(a);
    alpha.queueChat({ kind: 'status', status: 503, message: 'down' });
    expect(await answeredBy('first failure, on a')).toBe('beta');
    const aReadBy = Date.now();
    expect(await circuit()).toMatchObject({ failures: 1, open_until: null });
    only(b);
    alpha.queueChat({ kind: 'status', status: 503, message: 'down' });
    expect(await answeredBy('second failure, on b')).toBe('beta');
    const opened = await circuit();
    expect(opened.open_until).not.toBeNull();
    const alphaCalls = alpha.requests.length;

    // a recorded the first failure but not the opening; once its cached view is older than the
    // cache bound, it skips alpha as b does.
    only(a);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, aReadBy + circuitCacheMs + 100 - Date.now())),
    );
    expect(await answeredBy('open, on a')).toBe('beta');
    only(b);
    expect(await answeredBy('open, on b')).toBe('beta');
    expect(alpha.requests.length).toBe(alphaCalls);

    // Half-open: a makes the one trial, held at alpha; meanwhile b finds it claimed and skips alpha.
    // (Each process takes its call by turn: a process's local queue may hold a second job behind
    // the held trial, so two calls posted at once could both wait for it.)
    await new Promise((resolve) => setTimeout(resolve, Date.parse(opened.open_until!) - Date.now() + 100));
    let release!: () => void;
    alpha.queueChat({ kind: 'held', until: new Promise<void>((resolve) => (release = resolve)) });
    only(a);
    const trial = answeredBy('trial, on a');
    await waitUntil(async () => (alpha.requests.length === alphaCalls + 1 ? true : undefined));
    only(b);
    expect(await answeredBy('during the trial, on b')).toBe('beta');
    expect(alpha.requests.length).toBe(alphaCalls + 1);
    both();
    release();
    expect(await trial).toBe('alpha');
    expect(alpha.requests.length).toBe(alphaCalls + 1);
    expect(await circuit()).toMatchObject({ failures: 0, open_until: null });
    // Seven calls through two worker processes, frozen and thawed in turn, and two waits: on a loaded
    // machine that alone can approach the default minute.
  }, 120_000);
});
