import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { childrenOf, logLines, type Spawned, spawnNode } from '../../helpers/processes.ts';

let t: TestContext;
let tenant: Tenant;
const processes: Spawned[] = [];

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
});
afterAll(async () => {
  for (const p of processes) await p.stop();
  await t.close();
});

describe('Procfile deployment: separate web and worker processes on DATABASE_URL and S3', () => {
  it('serves from two web processes sharing state, with a worker process beside them', async () => {
    const [portA, portB] = [await freePort(), await freePort()];
    const shared = {
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      LOG_LEVEL: 'info',
    };
    const webA = spawnNode('api/server.ts', {
      ...shared,
      PORT: String(portA),
      PUBLIC_BASE_URL: `http://127.0.0.1:${portA}`,
    });
    const webB = spawnNode('api/server.ts', { ...shared, PORT: String(portB) });
    processes.push(webA, webB);
    await Promise.all([webA.waitFor(/api listening/), webB.waitFor(/api listening/)]);
    const worker = spawnNode('worker/main.ts', { ...shared, PUBLIC_BASE_URL: `http://127.0.0.1:${portA}` });
    processes.push(worker);
    await worker.waitFor(/worker started/);

    // Nothing embedded started: an embedded PostgreSQL would run as their child process and its
    // log would join theirs (component `postgres`); the embedded S3 server logs where it listens.
    for (const p of [webA, webB, worker]) {
      expect(childrenOf(p.child.pid!)).toEqual([]);
      const lines = logLines(p.output());
      expect(lines.filter((line) => line.component === 'postgres')).toEqual([]);
      expect(lines.filter((line) => line.msg === 'embedded S3 server listening')).toEqual([]);
    }

    const me = (port: number) =>
      fetch(`http://127.0.0.1:${port}/api/pub/v1/me`, {
        headers: { authorization: `Bearer ${tenant.testKey}` },
      });
    await awayFromMinuteEdge();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await me(portA)).status, (await me(portB)).status);
    }
    // The workspace allows 10 a minute in total, whichever process answers.
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(2);

    // The worker process ran the boot probe against web A and the shared database.
    await worker.waitFor(/Completed task \d+ \(status__probe/);
    const probed = await t.deps.pool.anyFirst(sql.type(z.object({ c: z.string() }))`
      select component || ':' || state as c from status_samples order by component
    `);
    expect(probed).toEqual(
      expect.arrayContaining([
        'api:operational',
        'database:operational',
        'storage:operational',
        'workers:operational',
      ]),
    );

    // Clients that leave at any moment (before, while or after their job is created) never take a
    // web process down (a crash would show as a failed request below or a non-zero exit), and the
    // connections they leave open, some never used, do not hold its shutdown to the headers timeout.
    const busy = await createTenant(t.deps.pool, { rateLimitPerMinute: 10_000 });
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), i % 20);
        await fetch(`http://127.0.0.1:${portB}/api/pub/v1/text`, {
          method: 'POST',
          headers: { authorization: `Bearer ${busy.testKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ prompt: `leaving after ${i % 20} ms`, stream: i % 2 === 0 }),
          signal: controller.signal,
        })
          .then((res) => res.text())
          .catch(() => undefined);
      }),
    );
    const still = await fetch(`http://127.0.0.1:${portB}/api/pub/v1/me`, {
      headers: { authorization: `Bearer ${busy.testKey}` },
    });
    expect(still.status).toBe(200);

    for (const p of [webA, webB, worker]) {
      const code = await p.stop();
      if (code !== 0) console.log(p.output().slice(-3000));
      expect(code).toBe(0);
    }
  });
});
