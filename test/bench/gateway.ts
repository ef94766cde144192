import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

import OpenAI from 'openai';
import { Registry } from 'prom-client';

import { loadConfig } from '../../shared/config/config.ts';
import { makePool } from '../../shared/db/pool.ts';
import { createLogger } from '../../shared/observability/logger.ts';
import { ProviderMetrics } from '../../worker/metrics/providerMetrics.ts';
import { eventStreamTarget, postEventStream } from '../../worker/providers/eventStream.ts';
import { makeLiveProviders } from '../../worker/providers/live.ts';
import { statCpuMs } from './cpu.ts';
import type { BenchContext } from './harness.ts';
import { median, percentile, timedCalls } from './stats.ts';

type Fake = { baseUrl: string; apiKey: string; child: ChildProcess };

/** The fake OpenAI-compatible provider in its own process (openaiMockProcess.ts). */
async function startFakeProcess(): Promise<Fake> {
  const child = spawn(process.execPath, [new URL('./openaiMockProcess.ts', import.meta.url).pathname], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  return { ...(JSON.parse(line) as { baseUrl: string; apiKey: string }), child };
}

const prompt = 'Tell the gateway bench a short story about seven words';
const maxTokens = 64;
const oneConnectionCalls = 300;
const streams = 64;
const seconds = 6;
const rounds = 4;

/**
 * The gateway's own cost (issue 34): a streamed chat call through the worker's gateway (route walk,
 * circuit breaker, provider budgets, balancer, deadlines, answer checks, metrics: makeLiveProviders,
 * exactly as a worker builds it) against the same call made directly with the official `openai`
 * package, as a team calling the provider itself would, both to one fake provider in a process of its
 * own. Targets: p50 at 1 connection ≤ 1 ms over direct; throughput at 64 concurrent streams ≥ 0.9×
 * direct. The gateway streams over its own HTTP client (eventStream.ts), not the SDK; that client
 * called bare is measured too, so the gateway layer's own cost stays visible apart from the client's.
 * Rounds alternate the order so a change in the host's load falls on each alike.
 */
export default async function gatewayBench(ctx: BenchContext): Promise<void> {
  const fake = await startFakeProcess();
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: ctx.databaseUrl,
    S3_ENDPOINT: ctx.s3.endpoint,
    S3_BUCKET: ctx.s3.bucket,
    PROVIDERS: JSON.stringify({
      providers: { fake: { type: 'openai', baseUrl: fake.baseUrl, apiKeyEnv: 'FAKE_KEY' } },
      routes: { text: ['fake/bench-model'] },
    }),
    FAKE_KEY: fake.apiKey,
  });
  const pool = await makePool(ctx.databaseUrl, { maxPoolSize: 4, name: 'bench-gateway' });
  const providers = makeLiveProviders(config, {
    pool,
    logger: createLogger('silent', 'bench'),
    metrics: new ProviderMetrics(new Registry()),
  });
  const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: fake.apiKey, maxRetries: 0 });
  const direct = async () => {
    const stream = await client.chat.completions.create({
      model: 'bench-model',
      messages: [{ role: 'user', content: prompt }],
      max_completion_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    if (!text) throw new Error('the direct call got no text');
  };
  // The gateway's own HTTP client called bare: what the gateway layer itself adds (route walk,
  // breaker, budgets, bounds, answer checks, metrics) over the wire it uses.
  const bareTarget = eventStreamTarget(fake.baseUrl, fake.apiKey, '/chat/completions');
  const bareBody = JSON.stringify({
    model: 'bench-model',
    messages: [{ role: 'user', content: prompt }],
    max_completion_tokens: maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  });
  const bare = async () => {
    let text = '';
    await postEventStream(bareTarget, bareBody, new AbortController().signal, (chunk) => {
      text += (chunk as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content ?? '';
    });
    if (!text) throw new Error('the bare call got no text');
  };
  const viaGateway = async () => {
    let text = '';
    const answer = await providers.chat.chat({
      messages: [{ role: 'user', content: prompt }],
      maxTokens,
      signal: new AbortController().signal,
      onDelta: (piece) => {
        text += piece;
      },
    });
    if (!text || answer.text !== text) throw new Error('the gateway call got no text');
  };
  try {
    await timedCalls(direct, 50);
    await timedCalls(viaGateway, 50);
    await timedCalls(bare, 50);
    const calls = { direct, gateway: viaGateway, bare };
    const empty = () => ({ direct: [] as number[], gateway: [] as number[], bare: [] as number[] });
    const [one, many] = [empty(), empty()];
    // CPU per call of this process (caller + gateway) and of the fake provider: tells a gateway that
    // costs CPU from one that waits.
    const [cpu, fakeCpu] = [empty(), empty()];
    // Each round runs the three in the reverse order of the last (ABC CBA…): none always goes last.
    for (let round = 0; round < rounds; round++) {
      const forward = ['direct', 'gateway', 'bare'] as const;
      const order = round % 2 === 0 ? forward : ([...forward].reverse() as (typeof forward)[number][]);
      for (const which of order) {
        one[which].push(...(await timedCalls(calls[which], oneConnectionCalls / rounds)));
      }
      for (const which of order) {
        const rate = await concurrentRate(calls[which], fake);
        many[which].push(rate.perSecond);
        cpu[which].push(rate.cpuMsPerCall);
        fakeCpu[which].push(rate.fakeCpuMsPerCall);
      }
    }
    const [d, g] = [percentile(one.direct, 50), percentile(one.gateway, 50)];
    const [dr, gr, br] = [median(many.direct), median(many.gateway), median(many.bare)];
    ctx.report('gateway: a streamed chat call through the worker gateway vs the openai package directly', {
      'direct p50 / p99 ms, 1 connection': `${d.toFixed(2)} / ${percentile(one.direct, 99).toFixed(2)}`,
      'gateway p50 / p99 ms, 1 connection': `${g.toFixed(2)} / ${percentile(one.gateway, 99).toFixed(2)}`,
      'gateway cost at p50 (target ≤ 1 ms)': `${(g - d).toFixed(2)} ${g - d <= 1 ? 'PASS' : 'FAIL'}`,
      [`direct calls/s, ${streams} concurrent streams (median of ${rounds})`]: dr.toFixed(0),
      [`gateway calls/s, ${streams} concurrent streams (median of ${rounds})`]: gr.toFixed(0),
      [`its HTTP client bare calls/s, ${streams} concurrent streams`]: br.toFixed(0),
      'this process CPU ms per call at 64 streams (direct, gateway, bare)': [cpu.direct, cpu.gateway, cpu.bare]
        .map((c) => median(c).toFixed(3))
        .join(', '),
      'fake provider CPU ms per call (direct, gateway, bare)': [fakeCpu.direct, fakeCpu.gateway, fakeCpu.bare]
        .map((c) => median(c).toFixed(3))
        .join(', '),
      'bare client p50 ms, 1 connection; the gateway layer over it': `${percentile(one.bare, 50).toFixed(2)}; +${(g - percentile(one.bare, 50)).toFixed(2)} ms`,
      'gateway / bare client throughput (the layer alone; no target)': (gr / br).toFixed(2),
      'throughput ratio vs the openai package (target ≥ 0.9)': `${(gr / dr).toFixed(2)} ${gr / dr >= 0.9 ? 'PASS' : 'FAIL'}`,
    });
  } finally {
    await providers.close();
    await pool.end();
    fake.child.stdin!.end();
    await once(fake.child, 'exit');
  }
}

/** Calls per second with `streams` calls always in flight for `seconds`, and their CPU per call. */
async function concurrentRate(call: () => Promise<void>, fake: Fake) {
  const until = performance.now() + seconds * 1000;
  const cpuBefore = process.cpuUsage();
  const fakeBefore = statCpuMs(`/proc/${fake.child.pid}/stat`);
  let done = 0;
  await Promise.all(
    Array.from({ length: streams }, async () => {
      while (performance.now() < until) {
        await call();
        done++;
      }
    }),
  );
  const used = process.cpuUsage(cpuBefore);
  return {
    perSecond: done / seconds,
    cpuMsPerCall: (used.user + used.system) / 1000 / Math.max(1, done),
    fakeCpuMsPerCall: (statCpuMs(`/proc/${fake.child.pid}/stat`) - fakeBefore) / Math.max(1, done),
  };
}
