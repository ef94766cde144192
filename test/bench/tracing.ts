import { makePool } from '../../shared/db/pool.ts';
import { freePort } from '../../shared/embedded/freePort.ts';
import { createTenant } from '../helpers/fixtures.ts';
import { startOtlpReceiver } from '../helpers/otlpReceiver.ts';
import { spawnNode } from '../helpers/processes.ts';
import { apiProcessEnv, type BenchContext, type LoadResult, medianResult } from './harness.ts';

const rounds = 3;

/** An api process of its own (tracing is decided when a process starts); logs nothing per request. */
async function spawnApi(ctx: BenchContext, env: Record<string, string>) {
  const port = await freePort();
  const api = spawnNode('api/server.ts', { ...apiProcessEnv(ctx, port), LOG_LEVEL: 'info', ...env });
  await api.waitFor(/api listening/);
  return { url: `http://127.0.0.1:${port}/api/pub/v1/me`, stop: () => api.stop() };
}

/**
 * GET /me with tracing exporting to a local OTLP/HTTP receiver (the SDK's default batching) against
 * the same api with tracing off, each in a process of its own, measured in alternating rounds so a
 * change in the host's load falls on both alike. The receiver only counts what arrives.
 */
export default async function tracingBench(ctx: BenchContext): Promise<void> {
  const receiver = await startOtlpReceiver({ decode: false });
  const pool = await makePool(ctx.databaseUrl, { maxPoolSize: 2, name: 'bench-tracing' });
  const tenant = await createTenant(pool, { credits: 1_000_000 });
  const off = await spawnApi(ctx, {});
  const on = await spawnApi(ctx, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint });
  const headers = { authorization: `Bearer ${tenant.testKey}` };
  try {
    for (const api of [off, on]) await ctx.load({ url: api.url, headers, connections: 8, seconds: 2 });
    const runs: { off: LoadResult[]; on: LoadResult[] } = { off: [], on: [] };
    for (let i = 0; i < rounds; i++) {
      runs.off.push(await ctx.load({ url: off.url, headers, connections: 32, seconds: 6 }));
      runs.on.push(await ctx.load({ url: on.url, headers, connections: 32, seconds: 6 }));
    }
    const [offResult, onResult] = [medianResult(runs.off), medianResult(runs.on)];
    const ratio = onResult.requestsPerSecond / offResult.requestsPerSecond;
    ctx.report('GET /me with tracing exporting to a local receiver vs off', {
      'off requests/s': offResult.requestsPerSecond,
      'off p50 / p99 ms': `${offResult.p50Ms} / ${offResult.p99Ms}`,
      'on requests/s': onResult.requestsPerSecond,
      'on p50 / p99 ms': `${onResult.p50Ms} / ${onResult.p99Ms}`,
      'errors / non-2xx (off, on)': `${offResult.errors} / ${offResult.non2xx}, ${onResult.errors} / ${onResult.non2xx}`,
      'exports received': receiver.exports(),
      'steal % (off, on)': `${offResult.stealPercent}, ${onResult.stealPercent}`,
      'throughput ratio on / off': ratio.toFixed(3),
    });
  } finally {
    await off.stop();
    await on.stop();
    await pool.end();
    await receiver.close();
  }
}
