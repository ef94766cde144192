import { freePort } from '../../shared/embedded/freePort.ts';
import type { OtlpReceiver } from '../helpers/otlpReceiver.ts';
import { projectRoot, type Spawned, spawnProcess } from '../helpers/processes.ts';
import { processCpuMs } from './cpu.ts';
import { apiProcessEnv, type BenchContext } from './harness.ts';
import { median } from './stats.ts';

/**
 * One api set-up measured beside the others: its name in the report and its environment. The first
 * two are tracing off: their mean is what the others are compared with, and the second against the
 * first is the method's noise floor.
 */
export type Variant = { name: string; env: Record<string, string> };

const blocks = 3;
const roundsPerBlock = 6;
const roundSeconds = 6;
/** Offered to each process at once: together well under what one core answers, so none queues. */
const ratePerProcess = 200;

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
      const child = spawnProcess('taskset', ['-c', cpus, process.execPath, `${projectRoot}/api/server.ts`], env);
      running.push({ variant, process: child, url: `http://127.0.0.1:${port}/api/pub/v1/me` });
      await child.waitFor(/api listening/);
    }
    return running;
  } catch (error) {
    for (const r of running) await r.process.stop();
    throw error;
  }
}

/**
 * Every variant in an api process of its own, all on core `cpus` at once, each offered the same
 * GET /me calls a second; what each process spends per call (every thread, from the scheduler's
 * nanosecond count) against the two tracing-off processes' in the same seconds. Measured one after
 * the other, two set-ups land on a core whose speed drifts (up to 2× here between scenarios); side by
 * side they share its speed, and the start order rotates each round. What remains is each process's
 * own lot (its heap, what the JIT made of it): the second tracing-off process shows it, and the
 * processes are started afresh for each of `blocks` blocks. At this rate a process's work per second
 * that no call causes (timers, the batch export, collecting a bigger heap) falls on 200 calls, where
 * a saturated process spreads it over thousands: these ratios are the harsher reading.
 */
export async function tracingSideBySide(
  ctx: BenchContext,
  options: { variants: Variant[]; cpus: string; receiver: OtlpReceiver; headers: Record<string, string> },
): Promise<Record<string, string>> {
  const { variants, receiver, headers } = options;
  const ratios = variants.map(() => [] as number[]);
  const blockMedians = variants.map(() => [] as number[]);
  const answered = variants.map(() => [] as number[]);
  const exportsBefore = receiver.exports();
  for (let block = 0; block < blocks; block++) {
    const running = await startAll(ctx, variants, options.cpus, receiver);
    try {
      await Promise.all(running.map((r) => ctx.load({ url: r.url, headers, connections: 8, seconds: 3 })));
      const blockRatios = variants.map(() => [] as number[]);
      for (let round = 0; round < roundsPerBlock; round++) {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        const order = running.map((_, i) => (i + round + block) % running.length);
        const before = running.map((r) => processCpuMs(r.process.child.pid!));
        const results = await Promise.all(
          order.map((i) =>
            ctx.load({ url: running[i]!.url, headers, connections: 16, seconds: roundSeconds, rate: ratePerProcess }),
          ),
        );
        const perCall = running.map((r, i) => {
          const run = results[order.indexOf(i)]!;
          answered[i]!.push(run.requestsPerSecond);
          return (processCpuMs(r.process.child.pid!) - before[i]!) / Math.max(1, run.requestsPerSecond * roundSeconds);
        });
        // Against both tracing-off processes' mean: neither one's own lot decides every ratio.
        const off = (perCall[0]! + perCall[1]!) / 2;
        perCall.forEach((ms, i) => blockRatios[i]!.push((i === 1 ? perCall[0]! : off) / ms));
      }
      blockRatios.forEach((r, i) => {
        ratios[i]!.push(...r);
        blockMedians[i]!.push(median(r));
      });
    } finally {
      for (const r of running) await r.process.stop();
    }
  }
  const rows: Record<string, string> = {
    'processes, offered each': `${variants.length} on one core at once, ${ratePerProcess} calls/s`,
    'rounds': `${blocks} blocks of fresh processes × ${roundsPerBlock} rounds of ${roundSeconds} s`,
    'exports received': String(receiver.exports() - exportsBefore),
  };
  variants.forEach((variant, i) => {
    if (i === 0) return;
    rows[`${variant.name}: CPU per call ratio off / it (median of the rounds)`] = median(ratios[i]!).toFixed(3);
    rows[`${variant.name}: each block's median; calls/s answered`] =
      `${blockMedians[i]!.map((m) => m.toFixed(3)).join(', ')}; ${median(answered[i]!)}`;
  });
  return rows;
}
