import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { openRawSse, type RawSse } from '../../helpers/sse.ts';
import { waitUntil } from './tasks.helpers.ts';

// Two streams per workspace, held by two api instances on one database (two web dynos).
const limit = 2;
let t: TestContext;
let web: Awaited<ReturnType<typeof listenOnLoopback>>[];

beforeAll(async () => {
  t = await setupTestContext({ STREAMS_PER_WORKSPACE: String(limit) });
  const second = await t.secondApp();
  const taskStream = { holdMs: 120_000, heartbeatMs: 60_000 };
  web = [
    await listenOnLoopback(makeApp({ ...t.deps, taskStream })),
    await listenOnLoopback(makeApp({ ...second.deps, taskStream })),
  ];
});
afterAll(async () => {
  for (const server of web ?? []) await server.close();
  await t.close();
});

async function newTask(tenant: Tenant): Promise<string> {
  const res = await t.http.post(api('/tasks')).set(bearer(tenant.testKey)).send({ input: 'Follow me.' });
  expect(res.status).toBe(202);
  return res.body.task.id as string;
}

const open = (tenant: Tenant, taskId: string, on = 0): Promise<RawSse> =>
  openRawSse(`${web[on]!.origin}${api(`/tasks/${taskId}/stream`)}`, { headers: bearer(tenant.testKey) });

function leases(workspaceId: string): Promise<{ rows: number; counted: number }> {
  return t.deps.pool.one(sql.type(z.object({ rows: z.number(), counted: z.number() }))`
    select (select count(*)::int from stream_leases where workspace_id = ${workspaceId}) as rows,
           coalesce((select leases from stream_lease_counts where workspace_id = ${workspaceId}), 0) as counted
  `);
}

async function expectRefused(stream: RawSse): Promise<void> {
  expect(stream.status).toBe(429);
  const retryAfter = Number(stream.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
  expect(JSON.parse(await stream.body)).toEqual({
    error: {
      code: 'rate_limited',
      message: `This workspace already has ${limit} streams open; close one or retry after ${retryAfter} s.`,
      requestId: expect.stringMatching(/^req_/),
    },
  });
}

describe('the per-workspace limit on open streams', () => {
  it('holds across two api processes, spares other workspaces and frees a place when a stream closes', async () => {
    const tenant = await createTenant(t.deps.pool);
    const taskId = await newTask(tenant);
    const first = await open(tenant, taskId, 0);
    const second = await open(tenant, taskId, 1);
    expect([first.status, second.status]).toEqual([200, 200]);
    await expectRefused(await open(tenant, taskId, 0));
    await expectRefused(await open(tenant, taskId, 1));
    expect(await leases(tenant.workspaceId)).toEqual({ rows: 2, counted: 2 });

    // Another workspace has places of its own.
    const other = await createTenant(t.deps.pool);
    const elsewhere = await open(other, await newTask(other), 1);
    expect(elsewhere.status).toBe(200);
    elsewhere.close();

    // A client that goes away gives its place back, to whichever process asks next.
    first.close();
    await waitUntil(async () => ((await leases(tenant.workspaceId)).rows === 1 ? true : undefined));
    const third = await open(tenant, taskId, 1);
    expect(third.status).toBe(200);
    second.close();
    third.close();
    await waitUntil(async () => ((await leases(tenant.workspaceId)).counted === 0 ? true : undefined));
    expect(await leases(tenant.workspaceId)).toEqual({ rows: 0, counted: 0 });
  });

  it('never lets concurrent openings pass the limit', async () => {
    const tenant = await createTenant(t.deps.pool);
    const taskId = await newTask(tenant);
    const streams = await Promise.all(Array.from({ length: 10 }, (_, i) => open(tenant, taskId, i % 2)));
    const statuses = streams.map((s) => s.status).sort();
    expect(statuses).toEqual([200, 200, ...Array<number>(8).fill(429)]);
    expect(await leases(tenant.workspaceId)).toEqual({ rows: 2, counted: 2 });
    for (const s of streams) s.close();
    await waitUntil(async () => ((await leases(tenant.workspaceId)).counted === 0 ? true : undefined));
  });

  it('counts streaming POST /text too, refusing it before it creates a job', async () => {
    const tenant = await createTenant(t.deps.pool);
    const taskId = await newTask(tenant);
    const held = [await open(tenant, taskId, 0), await open(tenant, taskId, 1)];
    expect(held.map((s) => s.status)).toEqual([200, 200]);
    const jobsBefore = await jobCount(tenant.workspaceId);
    const text = await openRawSse(`${web[0]!.origin}${api('/text')}`, {
      method: 'POST',
      headers: { ...bearer(tenant.testKey), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Stream me', stream: true }),
    });
    await expectRefused(text);
    expect(await jobCount(tenant.workspaceId)).toBe(jobsBefore);
    for (const s of held) s.close();
  });

  it('does not count leases a dead process left once they expire, and names when one will', async () => {
    const tenant = await createTenant(t.deps.pool);
    const taskId = await newTask(tenant);
    // As a process killed with two streams open leaves them: rows and count, nothing to release them.
    await orphanLeases(tenant.workspaceId, ['45 seconds', '90 seconds']);
    const refused = await open(tenant, taskId, 0);
    await expectRefused(refused);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(44);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(46);

    // Once they expired, the next opening purges them and takes a place.
    await t.deps.pool.query(sql.unsafe`
      update stream_leases set expires_at = now() - interval '1 second' where workspace_id = ${tenant.workspaceId}
    `);
    const admitted = await open(tenant, taskId, 1);
    expect(admitted.status).toBe(200);
    expect(await leases(tenant.workspaceId)).toEqual({ rows: 1, counted: 1 });
    admitted.close();
    await waitUntil(async () => ((await leases(tenant.workspaceId)).counted === 0 ? true : undefined));
  });
});

describe('a stream that ends by itself', () => {
  it('gives its place back when its hold is over', async () => {
    const tenant = await createTenant(t.deps.pool);
    const taskId = await newTask(tenant);
    const short = await listenOnLoopback(makeApp({ ...t.deps, taskStream: { holdMs: 200, heartbeatMs: 60_000 } }));
    try {
      const stream = await openRawSse(`${short.origin}${api(`/tasks/${taskId}/stream`)}`, {
        headers: bearer(tenant.testKey),
      });
      expect(stream.status).toBe(200);
      expect(await stream.ended).toEqual({ complete: true });
      expect(stream.events.map((e) => e.event)).toEqual(['done']);
      await waitUntil(async () => ((await leases(tenant.workspaceId)).counted === 0 ? true : undefined));
      expect(await leases(tenant.workspaceId)).toEqual({ rows: 0, counted: 0 });
    } finally {
      await short.close();
    }
  });
});

function jobCount(workspaceId: string): Promise<number> {
  return t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from jobs where workspace_id = ${workspaceId}
  `);
}

async function orphanLeases(workspaceId: string, lifetimes: string[]): Promise<void> {
  await t.deps.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`
      insert into stream_lease_counts (workspace_id, leases) values (${workspaceId}, ${lifetimes.length})
    `);
    for (const lifetime of lifetimes) {
      await tx.query(sql.unsafe`
        insert into stream_leases (id, workspace_id, expires_at)
        values (${newId('sse')}, ${workspaceId}, now() + ${lifetime}::interval)
      `);
    }
  });
}
