import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { createParser } from 'eventsource-parser';
import { z } from 'zod';

import { cursorKey, encodeCursor } from '../../api/http/cursor.ts';
import { makePool } from '../../shared/db/pool.ts';
import { insertTaskMessage } from '../../shared/db/queries/taskMessages.ts';
import type { DatabasePool } from '../../shared/db/sql.ts';
import { sql } from '../../shared/db/sql.ts';
import { freePort } from '../../shared/embedded/freePort.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { appendMessage } from '../../shared/tasks/messages.ts';
import { createTenant, insertBareTask } from '../helpers/fixtures.ts';
import type { BenchContext } from './harness.ts';
import { collectGarbage } from './inspector.ts';

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
export async function replyLatency(ctx: BenchContext): Promise<void> {
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

type RawStream = {
  req: http.ClientRequest;
  received: Map<string, number>;
  /** Called with each message id as it arrives (after `received` has it). */
  onMessage?: (id: string) => void;
  ended: boolean;
};

/** An SSE request on its own socket, recording when each message id arrives. */
function openRawStream(url: string, headers: Record<string, string>): Promise<RawStream> {
  return new Promise((resolve, reject) => {
    const stream: RawStream = { req: undefined as never, received: new Map(), ended: false };
    stream.req = http.request(
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
              resolve(stream);
            } else if (block.startsWith('event: message')) {
              const data = block.split('\n').find((l) => l.startsWith('data: '))!;
              const id = (JSON.parse(data.slice(6)) as { id: string }).id;
              stream.received.set(id, performance.now());
              stream.onMessage?.(id);
            }
          }
        });
        res.on('end', () => {
          stream.ended = true;
        });
        res.on('error', () => {});
      },
    );
    stream.req.on('error', reject);
    stream.req.end();
  });
}

function rssKib(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]);
}

async function startApiProcess(
  ctx: BenchContext,
  port: number,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'api/server.ts')], {
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
      ...env,
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

/** Resolves when `stream` receives message `id` (at once when it already has). */
function arrival(stream: RawStream, id: string, timeoutMs: number): Promise<number | undefined> {
  const at = stream.received.get(id);
  if (at !== undefined) return Promise.resolve(at);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      stream.onMessage = undefined;
      resolve(undefined);
    }, timeoutMs);
    stream.onMessage = (arrived) => {
      if (arrived !== id) return;
      clearTimeout(timer);
      stream.onMessage = undefined;
      resolve(stream.received.get(id));
    };
  });
}

const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

/**
 * 10,000 idle streams on one api process (a child running api/server.ts, so its RSS is its own),
 * each on a task of its own, all in one workspace (STREAMS_PER_WORKSPACE raised for it). Then: one
 * reply at a time to a random one of them, commit to arrival (the target: p99 ≤ 10 ms while the
 * other 9,999 idle); and one burst of replies to 1,000 tasks in one transaction (fan-out, for
 * information).
 */
export async function idleStreams(ctx: BenchContext): Promise<void> {
  const streamCount = 10_000;
  const burstTasks = 1000;
  const rssTargetKib = 20;
  const p99TargetMs = 10;
  const pool = await makePool(ctx.databaseUrl, { maxPoolSize: 8, name: 'bench-streams' });
  const tenant = await createTenant(pool, { credits: 0, rateLimitPerMinute: 100_000_000 });
  const taskIds = await inBatches(streamCount, 8, async (i) => {
    const taskId = await insertBareTask(pool, tenant, `Stream bench ${i}`);
    await insertTaskMessage(pool, {
      id: newId('msg'),
      workspaceId: tenant.workspaceId,
      taskId,
      role: 'user',
      text: 'hi',
    });
    return taskId;
  });
  await ctx.analyze();
  const port = await freePort();
  // The limit must admit every stream of the bench, all in one workspace.
  // The inspector lets the bench run full collections in it before reading its RSS.
  const inspectPort = await freePort();
  const child = await startApiProcess(ctx, port, { STREAMS_PER_WORKSPACE: String(streamCount * 2) }, [
    `--inspect=127.0.0.1:${inspectPort}`,
  ]);
  const settledRss = async () => {
    await collectGarbage(inspectPort);
    await new Promise((r) => setTimeout(r, 500));
    return rssKib(child.pid!);
  };
  const headers = { authorization: `Bearer ${tenant.testKey}` };
  const url = (i: number) => `http://127.0.0.1:${port}/api/pub/v1/tasks/${taskIds[i]}/stream`;
  const streams: RawStream[] = [];
  try {
    // Warm the process (JIT, pools, key cache, the heap grown to its working size by a load like
    // the one measured), then measure its baseline; every RSS is read after full collections.
    const warm = await inBatches(2000, 200, (i) => openRawStream(url(i), headers));
    for (const s of warm) s.req.destroy();
    await new Promise((r) => setTimeout(r, 1500));
    const rssBefore = await settledRss();

    const half = streamCount / 2;
    const openStarted = performance.now();
    streams.push(...(await inBatches(half, 200, (i) => openRawStream(url(i), headers))));
    const openedHalfAt = performance.now();
    const rssHalf = await settledRss();
    const resumedAt = performance.now();
    streams.push(...(await inBatches(half, 200, (i) => openRawStream(url(half + i), headers))));
    const openSeconds = (openedHalfAt - openStarted + performance.now() - resumedAt) / 1000;
    const rssUncollected = rssKib(child.pid!);
    const rssAfter = await settledRss();
    const rssPerStream = (rssAfter - rssBefore) / streamCount;
    // What one more stream costs, without what the first ones paid once (the second half's growth).
    const rssMarginal = (rssAfter - rssHalf) / half;

    // One reply at a time, to a random stream's task.
    const single: number[] = [];
    let singleMissing = 0;
    for (let n = 0; n < 320; n++) {
      const i = Math.floor(Math.random() * streamCount);
      const { ids, committedAt } = await publishRound(pool, tenant.workspaceId, tenant.projectId, [
        taskIds[i]!,
      ]);
      const at = await arrival(streams[i]!, ids[0]!, 5000);
      if (n < 20) continue; // warm-up
      if (at === undefined) singleMissing++;
      else single.push(at - committedAt);
    }
    single.sort((a, b) => a - b);
    const singleP99 = percentile(single, 99);

    // A burst: replies to 1,000 tasks committed together.
    const burst: number[] = [];
    let burstMissing = 0;
    const picked = Array.from({ length: burstTasks }, (_, k) => (k * streamCount) / burstTasks);
    const { ids, committedAt } = await publishRound(
      pool,
      tenant.workspaceId,
      tenant.projectId,
      picked.map((i) => taskIds[i]!),
    );
    const arrived = await Promise.all(picked.map((i, k) => arrival(streams[i]!, ids[k]!, 15_000)));
    for (const at of arrived) {
      if (at === undefined) burstMissing++;
      else burst.push(at - committedAt);
    }
    burst.sort((a, b) => a - b);
    const endedEarly = streams.filter((s) => s.ended).length;

    ctx.report(`Tasks: ${streamCount} idle SSE streams on one api process (one task each)`, {
      'streams opened': streams.length,
      'open rate': `${Math.round(streamCount / openSeconds)} streams/s`,
      'api RSS before / after (after full collections)': `${(rssBefore / 1024).toFixed(1)} MiB / ${(rssAfter / 1024).toFixed(1)} MiB`,
      'api RSS after, before collecting': `${(rssUncollected / 1024).toFixed(1)} MiB`,
      [`RSS per stream, all ${streamCount} over the warmed baseline (target ≤ ${rssTargetKib} KiB)`]: `${rssPerStream.toFixed(1)} KiB ${verdict(rssPerStream <= rssTargetKib)}`,
      'RSS per stream, marginal (the second half)': `${rssMarginal.toFixed(1)} KiB`,
      'one reply to one stream: samples / missing': `${single.length} / ${singleMissing}`,
      'one reply: commit → event min / p50 / max': `${ms(single[0]!)} / ${ms(percentile(single, 50))} / ${ms(single.at(-1)!)}`,
      [`one reply: p99 (target ≤ ${p99TargetMs} ms)`]: `${ms(singleP99)} ${verdict(singleMissing === 0 && singleP99 <= p99TargetMs)}`,
      [`burst of ${burstTasks} replies in one commit: delivered / missing`]: `${burst.length} / ${burstMissing}`,
      'burst: commit → event p50 / p99 / max': `${ms(percentile(burst, 50))} / ${ms(percentile(burst, 99))} / ${ms(burst.at(-1)!)}`,
      'streams ended before the measurements did': endedEarly,
    });
  } finally {
    for (const s of streams) s.req.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await pool.end();
  }
}
