import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createParser } from 'eventsource-parser';
import { z } from 'zod';

import { cursorKey, encodeCursor } from '../../api/cursor.ts';
import { makePool } from '../../shared/db/pool.ts';
import { insertTaskMessage } from '../../shared/db/queries/taskMessages.ts';
import { insertTask } from '../../shared/db/queries/tasks.ts';
import type { DatabasePool } from '../../shared/db/sql.ts';
import { sql } from '../../shared/db/sql.ts';
import { freePort } from '../../shared/embedded/freePort.ts';
import { newId } from '../../shared/ids.ts';
import { appendMessage } from '../../shared/tasks/messages.ts';
import { createTenant } from '../helpers/fixtures.ts';
import type { BenchContext } from './harness.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const ms = (v: number) => `${v.toFixed(1)} ms`;

/** Resolves with the first `message` event of an SSE response body. */
async function firstMessage(response: Response): Promise<number> {
  const decoder = new TextDecoder();
  let arrived: number | undefined;
  const parser = createParser({
    onEvent(event) {
      if (event.event === 'message' && arrived === undefined) arrived = performance.now();
    },
  });
  for await (const chunk of response.body!) {
    parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    if (arrived !== undefined) return arrived;
  }
  throw new Error('stream ended without a message');
}

/**
 * POST /tasks → the assistant reply on GET /tasks/{id}/stream, one task at a time, with a test key
 * (fixture replies: this measures the platform, not a model). The stream is opened right after the
 * 202 with a cursor "after the first message", minted with the platform's own cursor key: a client
 * without a cursor streams "from now" and would miss a reply committed before its stream opened.
 */
async function replyLatency(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform();
  const key = await cursorKey(platform.pool);
  const auth = { authorization: `Bearer ${platform.tenant.testKey}` };
  // The worker's boot status probe runs once at start; let it finish before measuring.
  const probeDeadline = Date.now() + 60_000;
  while (Date.now() < probeDeadline) {
    const samples = await platform.pool.oneFirst(
      sql.type(z.object({ n: z.number() }))`select count(*)::int as n from status_samples`,
    );
    if (samples > 0) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const once = async (): Promise<number> => {
    const started = performance.now();
    const created = await fetch(`${platform.baseUrl}/tasks`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Benchmark: summarise this sentence.' }),
    });
    if (created.status !== 202) throw new Error(`POST /tasks answered ${created.status}`);
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    const cursor = encodeCursor(key, { purpose: 'stream', taskId, seq: 1 });
    const controller = new AbortController();
    const stream = await fetch(`${platform.baseUrl}/tasks/${taskId}/stream?cursor=${cursor}`, {
      headers: auth,
      signal: controller.signal,
    });
    try {
      return (await firstMessage(stream)) - started;
    } finally {
      controller.abort();
    }
  };
  try {
    for (let i = 0; i < 20; i++) await once(); // warm-up
    const samples: number[] = [];
    for (let i = 0; i < 300; i++) samples.push(await once());
    samples.sort((a, b) => a - b);
    ctx.report('Tasks: POST /tasks → assistant reply on the SSE stream (test key, sequential)', {
      samples: samples.length,
      p50: ms(percentile(samples, 50)),
      p99: ms(percentile(samples, 99)),
      max: ms(samples.at(-1)!),
    });
  } finally {
    await platform.stop();
  }
}

type RawStream = { req: http.ClientRequest; received: Map<string, number> };

/** An SSE request on its own socket, recording when each message id arrives. */
function openRawStream(url: string, headers: Record<string, string>): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const received = new Map<string, number>();
    const req = http.request(
      url,
      { agent: false, headers: { ...headers, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`stream answered ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        let buffer = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (!opened && block.startsWith(':')) {
              opened = true;
              resolve({ req, received });
            } else if (block.startsWith('event: message')) {
              const data = block.split('\n').find((l) => l.startsWith('data: '))!;
              received.set((JSON.parse(data.slice(6)) as { id: string }).id, performance.now());
            }
          }
        });
        res.on('error', () => {});
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function rssKib(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
}

async function startApiProcess(ctx: BenchContext, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(root, 'api/server.ts')], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      NODE_ENV: 'production',
      LOG_LEVEL: 'warn',
      PORT: String(port),
      DATABASE_URL: ctx.databaseUrl,
      S3_ENDPOINT: ctx.s3.endpoint,
      S3_BUCKET: ctx.s3.bucket,
      RATE_LIMIT_PER_MINUTE: '100000000',
    },
  });
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('api process did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function inBatches<T>(
  count: number,
  concurrency: number,
  make: (i: number) => Promise<T>,
): Promise<T[]> {
  const out: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        out[i] = await make(i);
      }
    }),
  );
  return out;
}

/** Commits one assistant reply per task in one transaction; returns the ids and when the commit returned. */
async function publishRound(pool: DatabasePool, workspaceId: string, projectId: string, taskIds: string[]) {
  const ids = await pool.transaction(async (tx) => {
    const out: string[] = [];
    for (const taskId of taskIds) {
      const row = await appendMessage(tx, {
        id: newId('msg'),
        workspaceId,
        taskId,
        role: 'assistant',
        text: 'fan-out',
        projectId,
      });
      out.push(row!.id);
    }
    return out;
  });
  return { ids, committedAt: performance.now() };
}

/**
 * 5,000 idle streams on one api process (a child running api/server.ts, so its RSS is its own),
 * spread over 100 tasks; then rounds of one reply per task, committed in one transaction: each
 * notification costs the process one read per task, written to that task's 50 streams.
 */
async function idleStreams(ctx: BenchContext): Promise<void> {
  const streamCount = 5000;
  const taskCount = 100;
  const pool = await makePool(ctx.databaseUrl, { maxPoolSize: 4, name: 'bench-streams' });
  const tenant = await createTenant(pool, { credits: 0, rateLimitPerMinute: 100_000_000 });
  const taskIds: string[] = [];
  for (let i = 0; i < taskCount; i++) {
    const task = await insertTask(pool, {
      id: newId('task'),
      workspaceId: tenant.workspaceId,
      projectId: tenant.projectId,
      title: `Stream bench ${i}`,
      assigneeStaffId: null,
      workflowId: null,
      workflowValues: null,
    });
    await insertTaskMessage(pool, {
      id: newId('msg'),
      workspaceId: tenant.workspaceId,
      taskId: task.id,
      role: 'user',
      text: 'hi',
    });
    taskIds.push(task.id);
  }
  const port = await freePort();
  const child = await startApiProcess(ctx, port);
  const headers = { authorization: `Bearer ${tenant.testKey}` };
  const url = (i: number) => `http://127.0.0.1:${port}/api/pub/v1/tasks/${taskIds[i % taskCount]}/stream`;
  const streams: RawStream[] = [];
  try {
    // Warm the process (JIT, pool, key cache), then measure its baseline.
    const warm = await inBatches(200, 50, (i) => openRawStream(url(i), headers));
    for (const s of warm) s.req.destroy();
    await new Promise((r) => setTimeout(r, 1500));
    const rssBefore = rssKib(child.pid!);

    const openStarted = performance.now();
    streams.push(...(await inBatches(streamCount, 200, (i) => openRawStream(url(i), headers))));
    const openSeconds = (performance.now() - openStarted) / 1000;
    await new Promise((r) => setTimeout(r, 1000));
    const rssAfter = rssKib(child.pid!);

    const latencies: number[] = [];
    let missing = 0;
    for (let round = 0; round < 3; round++) {
      const { ids, committedAt } = await publishRound(pool, tenant.workspaceId, tenant.projectId, taskIds);
      const deadline = performance.now() + 15_000;
      const expectedFor = (i: number) => ids[i % taskCount]!;
      while (performance.now() < deadline && !streams.every((s, i) => s.received.has(expectedFor(i)))) {
        await new Promise((r) => setTimeout(r, 20));
      }
      streams.forEach((s, i) => {
        const at = s.received.get(expectedFor(i));
        if (at === undefined) missing++;
        else latencies.push(at - committedAt);
      });
    }
    latencies.sort((a, b) => a - b);
    ctx.report(
      `Tasks: ${streamCount} idle SSE streams on one api process (${taskCount} tasks × ${streamCount / taskCount} streams)`,
      {
        'streams opened': streams.length,
        'open rate': `${Math.round(streamCount / openSeconds)} streams/s`,
        'api RSS before / after': `${(rssBefore / 1024).toFixed(1)} MiB / ${(rssAfter / 1024).toFixed(1)} MiB`,
        'RSS per stream': `${((rssAfter - rssBefore) / streamCount).toFixed(1)} KiB`,
        'fan-out deliveries (3 rounds × 100 replies)': latencies.length,
        'fan-out missing': missing,
        'fan-out delivery min / p50 / p99 / max': `${ms(latencies[0]!)} / ${ms(percentile(latencies, 50))} / ${ms(percentile(latencies, 99))} / ${ms(latencies.at(-1)!)}`,
      },
    );
  } finally {
    for (const s of streams) s.req.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await pool.end();
  }
}

export default async function tasksBench(ctx: BenchContext): Promise<void> {
  await replyLatency(ctx);
  await idleStreams(ctx);
}
