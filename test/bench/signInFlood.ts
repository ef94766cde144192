import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';

import { freePort } from '../../shared/embedded/freePort.ts';
import type { SamplerOptions, SamplerResult } from '../helpers/latencySampler.ts';
import { spawnNode } from '../helpers/processes.ts';
import { parseResponse } from '../helpers/rawHttp.ts';
import type { BenchContext } from './harness.ts';

type Target = { url: string; headers: Record<string, string> };
type Flood = { me: SamplerResult; statuses: number[]; ms: number };

/**
 * GET /me's latency while 200 sign-ins arrive at once at one api process (its own process,
 * production settings), against the control: the same 200 requests with another browser's form
 * token, which are read, parsed and refused with nothing hashed. The control is what 200
 * connections at once cost this machine by themselves. Target: the sign-ins' p99 under twice the
 * control's plus 50 ms (the checks still admitted run on at most one core fewer than the machine
 * has). Before hashes in flight were bounded, every sign-in was hashed (p99 ~1 s on 2 cores).
 */
export default async function signInFloodBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform({ worker: false });
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const api = spawnNode('api/server.ts', {
    DATABASE_URL: ctx.databaseUrl,
    S3_ENDPOINT: ctx.s3.endpoint,
    S3_BUCKET: ctx.s3.bucket,
    PORT: String(port),
    PUBLIC_BASE_URL: origin,
    LOG_LEVEL: 'info',
    RATE_LIMIT_PER_MINUTE: '1000000',
  });
  try {
    await api.waitFor(/api listening/, 60_000);
    // Its request validators compile for seconds after it listens: not the flood's cost.
    await cpuQuiet(api.child.pid!);
    const me = {
      url: `${origin}/api/pub/v1/me`,
      headers: { authorization: `Bearer ${platform.tenant.liveKey}` },
    };
    const form = await openForm(origin);
    const otherBrowser = await openForm(origin);
    // Unknown emails from as many addresses (10.<batch>.x.y), so no address is throttled.
    const signIns = (batch: number, token: string) =>
      Array.from({ length: 200 }, (_, i) =>
        signInRequest(origin, form.cookie, token, {
          email: `flood${batch}-${i}@example.com`,
          password: `guess ${i}`,
          from: `10.${batch}.${Math.floor(i / 100)}.${(i % 100) + 1}`,
        }),
      );
    // One unmeasured burst of each kind first: a steady state is what is measured.
    await Promise.all(signIns(1, form.csrf).map((r) => rawExchange(origin, r)));
    await Promise.all(signIns(2, otherBrowser.csrf).map((r) => rawExchange(origin, r)));
    await cpuQuiet(api.child.pid!);
    const forged = await timedFlood(me, signIns(3, otherBrowser.csrf));
    await cpuQuiet(api.child.pid!);
    const flood = await timedFlood(me, signIns(4, form.csrf));
    const target = 2 * p99(forged) + 50;
    const unexpected = [
      ...forged.statuses.filter((status) => status !== 403),
      ...flood.statuses.filter((status) => status !== 401 && status !== 429),
      ...[...forged.me.statuses, ...flood.me.statuses].filter((status) => status !== 200),
    ];
    ctx.report('GET /me during 200 sign-ins at once (one api process)', {
      'control (forged tokens) GET /me p50 / p99 ms': `${p50(forged)} / ${p99(forged)} (${forged.me.latencies.length} samples)`,
      'sign-ins GET /me p50 / p99 ms': `${p50(flood)} / ${p99(flood)} (${flood.me.latencies.length} samples)`,
      'sign-ins checked (401) / throttled (429)': `${count(flood, 401)} / ${count(flood, 429)}`,
      'unexpected statuses': unexpected.length,
      'load average': loadavg()[0]!.toFixed(2),
      [`sign-ins p99 (target < 2 × control + 50 = ${target})`]: `${p99(flood)} ${p99(flood) < target ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await api.stop();
    await platform.stop();
  }
}

const count = (flood: Flood, status: number) => flood.statuses.filter((s) => s === status).length;
const p50 = (flood: Flood) => Math.round(percentile(flood.me.latencies, 50));
const p99 = (flood: Flood) => Math.round(percentile(flood.me.latencies, 99));

/** A browser that has just shown the sign-in form: its cookies and the form's token. */
async function openForm(origin: string): Promise<{ cookie: string; csrf: string }> {
  const page = await fetch(`${origin}/account/sign-in`);
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]*)"/.exec(await page.text())?.[1];
  if (!csrf) throw new Error('the sign-in page has no form token');
  return { cookie, csrf };
}

/** Sends every prepared request at once, each on a connection of its own, sampling `me` meanwhile. */
async function timedFlood(me: Target, requests: Buffer[]): Promise<Flood> {
  let statuses: number[] = [];
  let ms = 0;
  const sampled = await sampleWhile(me, async () => {
    const started = performance.now();
    statuses = await Promise.all(requests.map((request) => rawExchange(me.url, request)));
    ms = performance.now() - started;
  });
  return { me: sampled, statuses, ms };
}

/** A sign-in POST as bytes on the wire, prepared before the flood (the client's work is not the server's). */
function signInRequest(
  origin: string,
  cookie: string,
  token: string,
  fields: { email: string; password: string; from: string },
) {
  const body = new URLSearchParams({ _csrf: token, return_to: '/account', ...fields }).toString();
  return Buffer.from(
    `POST /account/sign-in HTTP/1.1\r\nHost: ${new URL(origin).host}\r\nConnection: close\r\n` +
      `Cookie: ${cookie}\r\nX-Forwarded-For: ${fields.from}\r\n` +
      `Content-Type: application/x-www-form-urlencoded\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/** Sends one prepared request on a connection of its own; resolves with the answer's status. */
function rawExchange(origin: string, request: Buffer): Promise<number> {
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    // Connection: close, so the server ends the connection once it has answered.
    const socket = net.connect(Number(url.port), url.hostname, () => socket.write(request));
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.once('error', reject);
    socket.once('close', () => {
      const answer = parseResponse(Buffer.concat(received));
      if (answer) resolve(answer.status);
      else reject(new Error('connection closed without an answer'));
    });
  });
}

/** GET `target` every 10 ms from a thread of its own for as long as `work` runs (latencySampler.ts). */
async function sampleWhile(target: Target, work: () => Promise<unknown>): Promise<SamplerResult> {
  const workerData: SamplerOptions = { ...target, intervalMs: 10 };
  const sampler = new Worker(new URL('../helpers/latencySampler.ts', import.meta.url), { workerData });
  try {
    sampler.postMessage('start');
    await once(sampler, 'message');
    await work();
    sampler.postMessage('stop');
    const [result] = (await once(sampler, 'message')) as [SamplerResult];
    return result;
  } finally {
    await sampler.terminate();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Resolves once process `pid` has used under 20 ms of CPU in half a second (start-up work done). */
async function cpuQuiet(pid: number): Promise<void> {
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    const before = cpuMs();
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (cpuMs() - before < 20) return;
    if (Date.now() > deadline) throw new Error('the api process never went quiet');
  }
}
