import { Registry } from 'prom-client';

import { HttpMetrics } from '../../api/metrics/httpMetrics.ts';
import type { RequestLogEntry } from '../../shared/db/queries/requestLogs.ts';
import { type BenchContext, type LoadResult, medianResult, type Platform } from './harness.ts';

// A multiple of three: each of the three apis runs first, second and third as often.
const rounds = 9;

/**
 * What metrics add to each call, timed alone: one observation of an answered call (a counter and a
 * histogram) in ns. Beside the server CPU per call it says what throughput runs on a busy machine
 * cannot resolve.
 */
function observationNs(): number {
  const metrics = new HttpMetrics(new Registry());
  const entry = { operation: 'platform.me', status: 200, latency_ms: 3 } as RequestLogEntry;
  const calls = 200_000;
  for (let i = 0; i < calls; i++) metrics.observe(entry);
  const started = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) metrics.observe(entry);
  return Math.round(Number(process.hrtime.bigint() - started) / calls);
}

/** GET /metrics on `platform` after `ms`: the size of the exposition. */
async function scrapeAfter(platform: Platform, ms: number): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, ms));
  const res = await fetch(`${platform.origin}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics: ${res.status}`);
  return text.length;
}

/**
 * GET /me with metrics on (the default) against the same api with METRICS=off, which observes
 * nothing per call and serves no /metrics. Target: on ≥ 0.97× off's throughput. Both run side by
 * side on the same database; runs alternate and the medians count, so the host's load falls on
 * both alike. Each "on" run is scraped once while under load (Prometheus scrapes every 15 s by
 * default; a run lasts 6), so the scrape's own cost is in its figures.
 */
export default async function metricsBench(ctx: BenchContext): Promise<void> {
  const on = await ctx.startPlatform({ worker: false });
  const off = await ctx.startPlatform({ worker: false, env: { METRICS: 'off' } });
  // A second METRICS=off api measured the same way: its ratio to `off` is what the set-up alone
  // makes of two identical servers, the error bar of the on/off figure.
  const control = await ctx.startPlatform({ worker: false, env: { METRICS: 'off' } });
  const run = (platform: Platform, seconds: number) =>
    ctx.load({
      url: `${platform.baseUrl}/me`,
      headers: { authorization: `Bearer ${platform.tenant.testKey}` },
      connections: 32,
      seconds,
    });
  try {
    if ((await fetch(`${off.origin}/metrics`)).status !== 404) {
      throw new Error('METRICS=off still serves /metrics');
    }
    // Warm all three (JIT, pool connections, validators) for as long as a measured run: after 2 s of
    // warming, the first measured run (the first round's, always `on`) was 10–30 % below that api's
    // later runs in three runs of this bench.
    for (const platform of [on, off, control]) await run(platform, 6);
    const runs = new Map<Platform, LoadResult[]>([
      [on, []],
      [off, []],
      [control, []],
    ]);
    let scrapeBytes = 0;
    for (let round = 0; round < rounds; round++) {
      // The order rotates: each api runs first, second and third equally often.
      const order = [on, off, control].map((_, i, all) => all[(i + round) % all.length]!);
      for (const platform of order) {
        const scrape = platform === on ? scrapeAfter(on, 3000) : undefined;
        runs.get(platform)!.push(await run(platform, 6));
        if (scrape) scrapeBytes = await scrape;
      }
    }
    const [onRuns, offRuns, controlRuns] = [on, off, control].map((p) => runs.get(p)!) as [
      LoadResult[],
      LoadResult[],
      LoadResult[],
    ];
    const a = medianResult(onRuns);
    const b = medianResult(offRuns);
    const ratio = a.requestsPerSecond / b.requestsPerSecond;
    const controlRatio = medianResult(controlRuns).requestsPerSecond / b.requestsPerSecond;
    // Each round's own ratio, on over off: a change of the host's load between rounds falls on both.
    const roundRatios = onRuns.map((r, i) => r.requestsPerSecond / offRuns[i]!.requestsPerSecond);
    const roundRatio = [...roundRatios].sort((x, y) => x - y)[Math.floor(rounds / 2)]!;
    const observeNs = observationNs();
    const share = observeNs / 1e6 / Math.max(0.001, b.serverCpuMsPerCall);
    ctx.report(
      `GET /me, metrics on vs METRICS=off (medians of ${rounds} rotating 6 s runs each, 32 connections)`,
      {
        'metrics off requests/s': b.requestsPerSecond,
        'metrics off p50 / p99 ms': `${b.p50Ms} / ${b.p99Ms}`,
        'metrics on requests/s': a.requestsPerSecond,
        'metrics on p50 / p99 ms': `${a.p50Ms} / ${a.p99Ms}`,
        'server CPU ms/call on / off': `${a.serverCpuMsPerCall} / ${b.serverCpuMsPerCall}`,
        'errors / non-2xx on, off': `${a.errors} / ${a.non2xx}, ${b.errors} / ${b.non2xx}`,
        'steal % on / off': `${a.stealPercent} / ${b.stealPercent}`,
        'per-run requests/s on': onRuns.map((r) => r.requestsPerSecond).join(', '),
        'per-run requests/s off': offRuns.map((r) => r.requestsPerSecond).join(', '),
        'per-run requests/s control (off again)': controlRuns.map((r) => r.requestsPerSecond).join(', '),
        'one scrape, bytes': scrapeBytes,
        'one observation alone, ns (share of off CPU/call)': `${observeNs} (${(100 * share).toFixed(2)} %)`,
        'per-round ratios on/off': roundRatios.map((r) => r.toFixed(2)).join(', '),
        'median of per-round ratios': roundRatio.toFixed(3),
        "control ratio off again/off (the set-up's own error)": controlRatio.toFixed(3),
        'throughput ratio on/off (target ≥ 0.97)': `${ratio.toFixed(3)} ${ratio >= 0.97 ? 'PASS' : 'FAIL'}`,
      },
    );
  } finally {
    await control.stop();
    await off.stop();
    await on.stop();
  }
}
