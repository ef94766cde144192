import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { insertStatusSample } from '../../../shared/db/queries/statusSamples.ts';
import { beatWorkers } from '../../../shared/db/queries/workerHeartbeats.ts';
import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import type { WorkerContext } from '../../../worker/context.ts';
import { makeProbes } from '../../../worker/probes.ts';
import { api, setupTestContext, type TestContext } from '../../helpers/context.ts';

let t: TestContext;
let server: http.Server;

beforeAll(async () => {
  // The api probe calls PUBLIC_BASE_URL/healthz, so the app really listens there.
  const port = await freePort();
  t = await setupTestContext({ PUBLIC_BASE_URL: `http://127.0.0.1:${port}` });
  server = http.createServer(t.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await t.close();
});

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000).toISOString();
type Component = {
  component: string;
  state: string;
  latencyMs: number | null;
  uptime90dPercent: number | null;
  days: { day: string; samples: number; upSamples: number; uptimePercent: number | null }[];
};

/** Ages the fleet's status snapshot past the 30 s cache, as time would. */
const expireSnapshot = () =>
  t.deps.pool.query(sql.unsafe`update status_snapshot set computed_at = now() - interval '31 seconds'`);

describe('GET /status', () => {
  it('reads unknown everywhere before any probe, without a key', async () => {
    const res = await t.http.get(api('/status')).expect(200);
    expect(res.body.state).toBe('unknown');
    expect(res.body.checkedAt).toBeNull();
    expect(res.body.components.map((c: Component) => c.component)).toEqual([
      'api',
      'workers',
      'database',
      'storage',
      'ocr',
    ]);
    for (const c of res.body.components as Component[]) {
      expect(c).toMatchObject({ state: 'unknown', latencyMs: null, checkedAt: null, uptime90dPercent: null });
      expect(c.days).toHaveLength(90);
    }
    expect(res.headers['cache-control']).toMatch(/max-age=(30|29)/);
  });

  it('derives each state from the samples: operational, degraded, outage, and unknown after 15 minutes', async () => {
    const pool = t.deps.pool;
    await insertStatusSample(pool, 'database', 'operational', 3, minutesAgo(1));
    await insertStatusSample(pool, 'storage', 'degraded', 1500, minutesAgo(2));
    await insertStatusSample(pool, 'api', 'operational', 4, minutesAgo(30));
    await insertStatusSample(pool, 'api', 'outage', null, minutesAgo(3));
    await insertStatusSample(pool, 'workers', 'operational', null, minutesAgo(16));
    // The fleet's snapshot is 30 s old; a process that reads it now computes a new one.
    await expireSnapshot();
    const other = await t.secondApp();
    const res = await other.http.get(api('/status')).expect(200);
    const byId = Object.fromEntries((res.body.components as Component[]).map((c) => [c.component, c]));
    expect(byId.database!.state).toBe('operational');
    expect(byId.database!.latencyMs).toBe(3);
    expect(byId.storage!.state).toBe('degraded');
    expect(byId.api!.state).toBe('outage');
    expect(byId.workers!.state).toBe('unknown');
    expect(byId.ocr!.state).toBe('unknown');
    expect(res.body.state).toBe('outage');
    expect(byId.api!.uptime90dPercent).toBe(50);
    const today = byId.api!.days.at(-1)!;
    expect(today.samples + (byId.api!.days.at(-2)?.samples ?? 0)).toBe(2);
    // Every other process answers that same snapshot until it is 30 s old.
    const third = await t.secondApp();
    const shared = await third.http.get(api('/status')).expect(200);
    expect(shared.body).toEqual(res.body);
    expect(Number(/max-age=(\d+)/.exec(shared.headers['cache-control']!)?.[1])).toBeLessThanOrEqual(30);
  });

  it('runs the probes as a worker job and records one sample per component', async () => {
    await t.startWorker();
    const count = () =>
      t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(distinct component) as n from status_samples where checked_at > now() - interval '1 minute'
          and component in ('api', 'workers', 'storage')
      `);
    const deadline = Date.now() + 20_000;
    while ((await count()) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    await expireSnapshot();
    const other = await t.secondApp();
    const res = await other.http.get(api('/status')).expect(200);
    const byId = Object.fromEntries((res.body.components as Component[]).map((c) => [c.component, c]));
    for (const component of ['api', 'workers', 'database', 'storage']) {
      expect([component, byId[component]!.state]).toEqual([component, 'operational']);
    }
    expect(byId.api!.latencyMs).toEqual(expect.any(Number));
  });
});

describe('the workers probe', () => {
  it('reads the fleet alive until its last heartbeat is WORKER_STALE_AFTER_MS old, as the reaper does', async () => {
    const probe = makeProbes().get('workers')!;
    const ctx = { pool: t.deps.pool, config: { ...t.deps.config, workerStaleAfterMs: 20_000 } };
    const beatAgo = async (seconds: number) => {
      await t.deps.pool.query(sql.unsafe`delete from worker_heartbeats`);
      await beatWorkers(t.deps.pool, ['probe-test-worker'], 'probe-test');
      await t.deps.pool.query(
        sql.unsafe`update worker_heartbeats set last_seen_at = now() - make_interval(secs => ${seconds})`,
      );
      return probe(ctx as unknown as WorkerContext, new AbortController().signal);
    };
    await expect(beatAgo(15)).resolves.toMatchObject({ state: 'operational' });
    await expect(beatAgo(25)).resolves.toMatchObject({ state: 'outage' });
  });
});
