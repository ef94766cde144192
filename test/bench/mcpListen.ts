import http from 'node:http';

import { newId } from '../../shared/primitives/ids.ts';
import { appendMessage } from '../../shared/tasks/messages.ts';
import { insertBareTask } from '../helpers/fixtures.ts';
import type { BenchContext, Platform } from './harness.ts';

const commits = 300;
const warmUp = 30;
// Streams are opened again on a new task every round, well inside the task stream's 60 s hold.
const perRound = 50;

type Stream = { req: http.ClientRequest; next(): Promise<number> };

/**
 * One event stream on its own socket: `ready` is the line that says it is open (the task stream's
 * opening comment, listen's acknowledgement); `next()` resolves with when the next `counted` block arrived.
 */
function openStream(
  url: string,
  options: { method: 'GET' | 'POST'; headers: Record<string, string>; body?: string },
  ready: (block: string) => boolean,
  counted: (block: string) => boolean,
): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const arrivals: number[] = [];
    let waiting: ((at: number) => void) | undefined;
    const req = http.request(
      url,
      { method: options.method, agent: false, headers: options.headers },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`${url} answered ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          buffer += chunk;
          for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (ready(block)) resolve(stream);
            if (!counted(block)) continue;
            const at = performance.now();
            if (waiting) {
              waiting(at);
              waiting = undefined;
            } else {
              arrivals.push(at);
            }
          }
        });
        res.on('error', () => {});
      },
    );
    const stream: Stream = {
      req,
      next: () => {
        const at = arrivals.shift();
        if (at !== undefined) return Promise.resolve(at);
        return new Promise((done, fail) => {
          const timer = setTimeout(() => fail(new Error(`no event on ${url} within 5 s`)), 5000);
          waiting = (arrived) => {
            clearTimeout(timer);
            done(arrived);
          };
        });
      },
    };
    req.on('error', reject);
    req.end(options.body);
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** A task with a task stream and a subscriptions/listen stream on it, both open. */
async function openPair(platform: Platform) {
  const { tenant } = platform;
  const taskId = await insertBareTask(platform.pool, tenant, 'Listen bench');
  const auth = { authorization: `Bearer ${tenant.testKey}` };
  const sse = await openStream(
    `${platform.baseUrl}/tasks/${taskId}/stream`,
    { method: 'GET', headers: { ...auth, accept: 'text/event-stream' } },
    (b) => b.startsWith(': stream open'),
    (b) => b.startsWith('event: message'),
  );
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'subscriptions/listen',
    params: {
      notifications: { resourceSubscriptions: [`svc://tasks/${taskId}`] },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
    },
  });
  const listen = await openStream(
    `${platform.baseUrl}/mcp`,
    {
      method: 'POST',
      headers: {
        ...auth,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body,
    },
    (b) => b.includes('notifications/subscriptions/acknowledged'),
    (b) => b.includes('notifications/resources/updated'),
  );
  return { taskId, sse, listen };
}

/**
 * Commit → notification: a staff reply committed (the worker's path, appendMessage) to a task that
 * has both a task stream (GET /tasks/{id}/stream) and an MCP subscriptions/listen stream open on
 * the same api; the time from the commit's return to each stream's event, for the same commits.
 * Target: listen's p50 and p99 within 2× the task stream's (issue 37).
 */
export async function mcpListenLatency(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  const sseTimes: number[] = [];
  const listenTimes: number[] = [];
  try {
    for (let done = 0; done < commits;) {
      const { taskId, sse, listen } = await openPair(platform);
      for (let i = 0; i < perRound && done < commits; i++, done++) {
        await platform.pool.transaction((tx) =>
          appendMessage(tx, {
            id: newId('msg'),
            workspaceId: platform.tenant.workspaceId,
            taskId,
            role: 'assistant',
            text: 'Bench reply.',
            projectId: platform.tenant.projectId,
          }),
        );
        const committedAt = performance.now();
        const [sseAt, listenAt] = await Promise.all([sse.next(), listen.next()]);
        if (done < warmUp) continue;
        sseTimes.push(sseAt - committedAt);
        listenTimes.push(listenAt - committedAt);
      }
      sse.req.destroy();
      listen.req.destroy();
    }
    sseTimes.sort((a, b) => a - b);
    listenTimes.sort((a, b) => a - b);
    const ratio = (p: number) => percentile(listenTimes, p) / Math.max(0.1, percentile(sseTimes, p));
    const verdict = (r: number) => `${r.toFixed(2)} ${r <= 2 ? 'PASS' : 'FAIL'}`;
    const row = (xs: number[]) =>
      `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 99).toFixed(1)} / ${xs.at(-1)!.toFixed(1)} ms`;
    ctx.report('MCP subscriptions/listen vs task SSE stream: commit → event (same commits)', {
      samples: listenTimes.length,
      'task stream p50 / p99 / max': row(sseTimes),
      'listen notification p50 / p99 / max': row(listenTimes),
      'p50 ratio (target ≤ 2)': verdict(ratio(50)),
      'p99 ratio (target ≤ 2)': verdict(ratio(99)),
    });
  } finally {
    await platform.stop();
  }
}
