import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from '@jest/globals';

import { freePort } from '../../../shared/embedded/freePort.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { type Spawned, spawnNode } from '../../helpers/processes.ts';

const started: Spawned[] = [];
let dataDir: string | undefined;

afterAll(async () => {
  for (const p of started) await p.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('npm start on the embedded defaults', () => {
  it('brings up PostgreSQL, S3, the api and a worker, prints demo keys once, and stops cleanly', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-start-'));
    const port = await freePort();
    // No DATABASE_URL or S3_ENDPOINT: everything embedded, as on a fresh machine.
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: '',
      S3_ENDPOINT: '',
      LOG_LEVEL: 'info',
    };
    const first = spawnNode('bin/start.ts', env);
    started.push(first);
    const [, testKey] = await first.waitFor(/test key\s+(svc_sk_test_\S+)/);
    const [, liveKey] = await first.waitFor(/live key\s+(svc_sk_live_\S+)/);
    await first.waitFor(/platform ready/);
    const base = `http://127.0.0.1:${port}/api/pub/v1`;
    const me = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${testKey}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { key: { livemode: boolean } }).key.livemode).toBe(false);
    const live = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${liveKey}` } });
    expect(((await live.json()) as { key: { livemode: boolean } }).key.livemode).toBe(true);
    // The worker's boot probe fills the status page (read once: GET /status is cached 30 s).
    await first.waitFor(/Completed task \d+ \(status__probe/);
    const status = (await (await fetch(`${base}/status`)).json()) as {
      components: { component: string; state: string }[];
    };
    const states = Object.fromEntries(status.components.map((c) => [c.component, c.state]));
    expect(states).toMatchObject({
      api: 'operational',
      workers: 'operational',
      database: 'operational',
      storage: 'operational',
    });
    // One process: the worker's job metrics are served with the api's at the api's /metrics (the
    // probe's attempt is counted once the queue has marked it complete, just after its log line).
    const probesDone = async () => {
      const metrics = parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
      expect(
        sampleValue(metrics, 'svc_http_requests_total', { operation: 'platform.me' }),
      ).toBeGreaterThanOrEqual(2);
      return sampleValue(metrics, 'svc_jobs_finished_total', { task: 'status__probe', outcome: 'succeeded' });
    };
    let probes = await probesDone();
    for (
      let deadline = Date.now() + 10_000;
      probes < 1 && Date.now() < deadline;
      probes = await probesDone()
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(probes).toBeGreaterThanOrEqual(1);
    expect(await first.stop()).toBe(0);

    // A second start reuses the data: same keys work, no new demo workspace.
    const second = spawnNode('bin/start.ts', env);
    started.push(second);
    await second.waitFor(/platform ready/);
    expect(second.output()).not.toMatch(/Demo workspace created/);
    const again = await fetch(`${base}/me`, { headers: { authorization: `Bearer ${testKey}` } });
    expect(again.status).toBe(200);
    expect(await second.stop()).toBe(0);
    // Two starts, the first with initdb: beyond the default minute on a loaded 2-core machine.
  }, 120_000);
});
