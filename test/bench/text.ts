import { randomUUID } from 'node:crypto';
import http from 'node:http';

import express from 'express';
import { Logger, run } from 'graphile-worker';
import pg from 'pg';
import { z } from 'zod';

import { sql } from '../../shared/db/sql.ts';
import { type BenchContext, listen, type LoadResult, medianResult, type Platform } from './harness.ts';
import { loadRow, percentile } from './stats.ts';

type Floor = { url: string; stop(): Promise<void> };

/**
 * The floor: a bare Express route that enqueues a graphile-worker job whose task only NOTIFYs, and
 * answers when that notification arrives. The least any queued endpoint can cost on this machine.
 */
export async function startFloor(databaseUrl: string, concurrency: number): Promise<Floor> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  const listener = new pg.Client({ connectionString: databaseUrl });
  await listener.connect();
  const waiting = new Map<string, () => void>();
  listener.on('notification', (msg) => {
    waiting.get(msg.payload ?? '')?.();
    waiting.delete(msg.payload ?? '');
  });
  await listener.query('listen bench_floor_done');
  const runner = await run({
    connectionString: databaseUrl,
    concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    logger: new Logger(() => () => {}),
    taskList: {
      bench_floor_noop: async (payload, helpers) => {
        await helpers.query("select pg_notify('bench_floor_done', $1)", [(payload as { id: string }).id]);
      },
    },
  });
  const app = express();
  app.use(express.json());
  app.post('/floor', async (_req, res) => {
    const id = randomUUID();
    const done = new Promise<void>((resolve) => waiting.set(id, resolve));
    await pool.query(
      "select graphile_worker.add_job('bench_floor_noop', json_build_object('id', $1::text))",
      [id],
    );
    await done;
    res.status(201).json({ id });
  });
  const server = http.createServer(app);
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}/floor`,
    stop: async () => {
      await new Promise((resolve) => server.close(resolve));
      await runner.stop();
      await listener.end();
      await pool.end();
    },
  };
}

const historyJobs = 50_000;

/**
 * Gives the tenant the history of a platform that has served traffic (finished text jobs and their
 * metering records), as a database in production has: statements are then planned against tables
 * of that size, not against the few rows a new database holds in its first seconds.
 */
async function seedHistory(platform: Platform, count: number): Promise<void> {
  const { workspaceId, projectId } = platform.tenant;
  await platform.pool.transaction(async (tx) => {
    await tx.query(sql.typeAlias('void')`
      insert into jobs (id, workspace_id, project_id, type, status, input, cost_minor, created_at,
                        started_at, completed_at)
      select 'job_history' || n, ${workspaceId}, ${projectId}, 'text.generate', 'succeeded', '{}',
             0, now() - make_interval(secs => n), now() - make_interval(secs => n), now() - make_interval(secs => n)
      from generate_series(1, ${count}) n
    `);
    await tx.query(sql.typeAlias('void')`
      insert into metering_records (id, job_id, workspace_id, project_id, operation, livemode, usage,
                                    cost_minor, currency, created_at)
      select 'mtr_history' || n, 'job_history' || n, ${workspaceId}, ${projectId}, 'text.generate',
             false, '{"inputTokens": 2, "outputTokens": 8}', 0, 'USD', now() - make_interval(secs => n)
      from generate_series(1, ${count}) n
    `);
  });
  const rows = await platform.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`select count(*)::int as n from jobs`,
  );
  if (rows < count) throw new Error(`history seed left ${rows} jobs`);
}

/** Milliseconds from sending a streaming POST /text to its first delta event, for `count` requests in turn. */
async function timeToFirstDelta(url: string, key: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt: `stream number ${i}`, stream: true }),
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    let first: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += decoder.decode(value, { stream: true });
      if (first === undefined && seen.includes('event: delta')) first = performance.now() - started;
    }
    if (first === undefined) throw new Error(`stream ${i} had no delta: ${seen.slice(0, 200)}`);
    times.push(first);
  }
  return times;
}

// Both sides are CPU-bound at 32 connections: what each call costs explains their throughputs.
const cpu = (r: LoadResult) =>
  `${r.serverCpuMsPerCall.toFixed(2)} + ${r.postgresCpuMsPerCall.toFixed(2)} = ${(r.serverCpuMsPerCall + r.postgresCpuMsPerCall).toFixed(2)}`;

const rounds = 3;

/**
 * POST /text (test key, through the queue: auth, validation, job row + enqueue, worker, settlement,
 * NOTIFY, result hand-over) beside the floor. Target: p50 ≤ floor p50 + 5 ms. Measured unloaded
 * (one connection: the latency the platform adds) and loaded (32 connections: throughput), each as
 * the median of three rounds that alternate floor and platform, then the streaming time to first
 * delta. The platform's database first gets the history of one that has served traffic
 * (seedHistory), and both databases are analyzed after the warm-up (see BenchContext.analyze). Every row shows the hypervisor's steal: figures taken under heavy steal are not comparable
 * with other runs, only with their own floor.
 */
export default async function textBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform();
  const floor = await startFloor(ctx.floorDatabaseUrl, platform.config.workerConcurrency);
  const textUrl = `${platform.baseUrl}/text`;
  const textLoad = {
    url: textUrl,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${platform.tenant.testKey}` },
    body: JSON.stringify({ prompt: 'Say hi' }),
  };
  const floorLoad = {
    url: floor.url,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json' },
    body: '{}',
  };
  try {
    await seedHistory(platform, historyJobs);
    await ctx.load({ ...floorLoad, connections: 8, seconds: 2 });
    await ctx.load({ ...textLoad, connections: 8, seconds: 2 });
    await ctx.analyze();
    const runs = {
      floorOne: [] as LoadResult[],
      textOne: [] as LoadResult[],
      floorMany: [] as LoadResult[],
      textMany: [] as LoadResult[],
    };
    for (let round = 0; round < rounds; round++) {
      runs.floorOne.push(await ctx.load({ ...floorLoad, connections: 1, seconds: 4 }));
      runs.textOne.push(await ctx.load({ ...textLoad, connections: 1, seconds: 4 }));
      runs.floorMany.push(await ctx.load({ ...floorLoad, connections: 32, seconds: 5 }));
      runs.textMany.push(await ctx.load({ ...textLoad, connections: 32, seconds: 5 }));
    }
    const floorOne = medianResult(runs.floorOne);
    const textOne = medianResult(runs.textOne);
    const floorMany = medianResult(runs.floorMany);
    const textMany = medianResult(runs.textMany);
    const ttfd = await timeToFirstDelta(textUrl, platform.tenant.testKey, 50);
    const verdict = (text: LoadResult, base: LoadResult) => {
      const over = text.p50Ms - base.p50Ms;
      return `${over >= 0 ? '+' : ''}${over.toFixed(1)} ms ${over <= 5 ? 'PASS' : 'FAIL'}`;
    };
    ctx.report(
      `POST /text (test key, through the queue) vs floor (Express + graphile-worker job + NOTIFY), median of ${rounds} rounds`,
      {
        'floor, 1 connection': loadRow(floorOne),
        'POST /text, 1 connection': loadRow(textOne),
        'p50 over floor, 1 connection (target ≤ +5 ms)': verdict(textOne, floorOne),
        'floor, 32 connections': loadRow(floorMany),
        'POST /text, 32 connections': loadRow(textMany),
        'p50 over floor, 32 connections (target ≤ +5 ms)': verdict(textMany, floorMany),
        'CPU per call at 32 connections, event loop + PostgreSQL ms: floor': cpu(floorMany),
        'CPU per call at 32 connections, event loop + PostgreSQL ms: POST /text': cpu(textMany),
        'throughput ratio, 32 connections': (
          textMany.requestsPerSecond / Math.max(1, floorMany.requestsPerSecond)
        ).toFixed(2),
        'streaming time to first delta p50 / p99 ms (50 sequential)': `${percentile(ttfd, 50).toFixed(1)} / ${percentile(ttfd, 99).toFixed(1)}`,
      },
    );
  } finally {
    await floor.stop();
    await platform.stop();
  }
}
