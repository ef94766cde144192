import { freePort } from '../../shared/embedded/freePort.ts';
import type { OtlpReceiver } from '../helpers/otlpReceiver.ts';
import { projectRoot, type Spawned, spawnProcess } from '../helpers/processes.ts';
import { processCpuMs } from './cpu.ts';
import { apiProcessEnv, type BenchContext } from './harness.ts';
import { meanWithError, median } from './stats.ts';

/** One api set-up measured beside two tracing-off processes: its name in the report and its environment. */
export type Variant = { name: string; env: Record<string, string> };

/**
 * Blocks of fresh processes a set-up is measured in unless told otherwise. A traced process's cost
 * varies from one start to the next by ±3–4 % (what its JIT and heap made of that start), so a
 * figure meant to settle a target a few per cent wide needs more (see `blocks`).
 */
const defaultBlocks = 3;
const roundsPerBlock = 4;
const roundSeconds = 6;
/**
 * Load before the first round, all three at once (a third of the core each). With 3 s, the traced
 * process was still compiling in the measured rounds: V8's worker threads took 27–93 µs of CPU a call
 * in its first rounds against 8–54 for tracing off, falling to 7–20 on both sides by the third.
 * That is a cost of starting, not of leaving tracing on.
 */
const warmSeconds = 30;

type Running = { variant: Variant; process: Spawned; url: string };

async function startAll(
  ctx: BenchContext,
  variants: Variant[],
  cpus: string,
  receiver: OtlpReceiver,
): Promise<Running[]> {
  const running: Running[] = [];
  try {
    for (const variant of variants) {
      const port = await freePort();
      const env: Record<string, string> = { ...apiProcessEnv(ctx, port), LOG_LEVEL: 'info', ...variant.env };
      if (env.OTEL_EXPORTER_OTLP_ENDPOINT === 'receiver') env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
      const child = spawnProcess(
        'taskset',
        ['-c', cpus, process.execPath, `${projectRoot}/api/server.ts`],
        env,
      );
      running.push({ variant, process: child, url: `http://127.0.0.1:${port}/api/pub/v1/me` });
      await child.waitFor(/api listening/);
    }
    return running;
  } catch (error) {
    for (const r of running) await r.process.stop();
    throw error;
  }
}

export type SideBySide = {
  /** Median over the rounds of off's CPU per call (the two off processes' mean) / the variant's. */
  ratio: number;
  /** Each block's median: a block is one set of fresh processes. */
  blockMedians: number[];
  /** The block medians' mean and its standard error: how far the figure can be trusted. */
  blockMean: { mean: number; standardError: number };
  /** The second tracing-off process against the first, the same way: the method's noise floor. */
  noiseFloor: number;
  /** Calls answered a second, median of the rounds: tracing off (first process), the variant. */
  answered: { off: number; on: number };
  exports: number;
};

/**
 * GET /me on two tracing-off api processes and `variant`'s, all three on core `cpus` at once, each
 * driven as fast as it answers: the scheduler gives each busy process an equal share of the core,
 * so what each spends per call (every thread, from the scheduler's nanosecond count) is its
 * throughput's inverse under the same conditions. Measured one after the other, the two sides land
 * on a core whose speed drifts (up to 2× here between runs); side by side they share it, and the
 * start order rotates each round. What remains is each process's own lot (its heap, what the JIT
 * made of it): the second tracing-off process shows it, the ratio is taken against the mean of
 * both, and the processes are started afresh for each of `blocks` blocks. Offered a fixed rate
 * instead (200 calls/s each), the three interleave call by call, every call runs on cold caches,
 * and the ratios scattered 3–4 times as widely (two tracing-off processes 0.84–1.15 a block).
 */
export async function sideBySide(
  ctx: BenchContext,
  options: {
    variant: Variant;
    cpus: string;
    receiver: OtlpReceiver;
    headers: Record<string, string>;
    /** Blocks of fresh processes (3 unless given). */
    blocks?: number;
  },
): Promise<SideBySide> {
  const blocks = options.blocks ?? defaultBlocks;
  const variants: Variant[] = [{ name: 'off', env: {} }, { name: 'off2', env: {} }, options.variant];
  const ratios: number[] = [];
  const noise: number[] = [];
  const blockMedians: number[] = [];
  const answered = { off: [] as number[], on: [] as number[] };
  const exportsBefore = options.receiver.exports();
  for (let block = 0; block < blocks; block++) {
    const running = await startAll(ctx, variants, options.cpus, options.receiver);
    try {
      await Promise.all(
        running.map((r) =>
          ctx.load({ url: r.url, headers: options.headers, connections: 8, seconds: warmSeconds }),
        ),
      );
      const blockRatios: number[] = [];
      for (let round = 0; round < roundsPerBlock; round++) {
        const order = running.map((_, i) => (i + round + block) % running.length);
        const before = running.map((r) => processCpuMs(r.process.child.pid!));
        const results = await Promise.all(
          order.map((i) =>
            ctx.load({
              url: running[i]!.url,
              headers: options.headers,
              connections: 16,
              seconds: roundSeconds,
            }),
          ),
        );
        const calls = running.map((_, i) =>
          Math.max(1, results[order.indexOf(i)]!.requestsPerSecond * roundSeconds),
        );
        const [off, off2, on] = running.map(
          (r, i) => (processCpuMs(r.process.child.pid!) - before[i]!) / calls[i]!,
        ) as [number, number, number];
        blockRatios.push((off + off2) / 2 / on);
        noise.push(off / off2);
        answered.off.push(calls[0]! / roundSeconds);
        answered.on.push(calls[2]! / roundSeconds);
      }
      ratios.push(...blockRatios);
      blockMedians.push(median(blockRatios));
    } finally {
      for (const r of running) await r.process.stop();
    }
  }
  return {
    ratio: median(ratios),
    blockMedians,
    blockMean: meanWithError(blockMedians),
    noiseFloor: median(noise),
    answered: { off: Math.round(median(answered.off)), on: Math.round(median(answered.on)) },
    exports: options.receiver.exports() - exportsBefore,
  };
}
