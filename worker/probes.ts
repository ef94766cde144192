import { setTimeout as sleep } from 'node:timers/promises';

import type { ProbeState } from '../shared/db/queries/statusSamples.ts';
import { countLiveWorkerProcesses } from '../shared/db/queries/workerHeartbeats.ts';
import { sql } from '../shared/db/sql.ts';
import type { WorkerContext } from './context.ts';
import { renderDigitsPng } from './providers/bitmapText.ts';
import { makeTesseractOcr } from './providers/tesseract.ts';

export type ProbeResult = { state: ProbeState; latencyMs: number | null };
export type Probe = (ctx: WorkerContext, signal: AbortSignal) => Promise<ProbeResult>;

const probeTimeoutMs = 10_000;

/**
 * Times `check`; slower than `slowMs` is degraded. A failure is retried twice, a second apart, before
 * it counts as an outage: one refused connection (a web dyno restarting) is not an outage. A stopping
 * worker (`signal`) neither waits for another attempt nor makes one.
 */
async function measured(
  ctx: WorkerContext,
  slowMs: number,
  signal: AbortSignal,
  check: () => Promise<unknown>,
  failed = 'status probe failed',
): Promise<ProbeResult> {
  let lastError: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const started = performance.now();
    try {
      await check();
      const latencyMs = Math.round(performance.now() - started);
      return { state: latencyMs > slowMs ? 'degraded' : 'operational', latencyMs };
    } catch (error) {
      lastError = error;
    }
    // The wait rejects only when the signal aborts, which the next line handles.
    if (attempt < 3) await sleep(1000, undefined, { signal }).catch(() => {});
    if (signal.aborted) break;
  }
  ctx.logger.warn({ err: lastError }, failed);
  return { state: 'outage', latencyMs: null };
}

/**
 * `measured`, each attempt given up after probeTimeoutMs. The attempt's timer ends with it: a
 * pending one would hold a stopping worker's process open for the rest of its ten seconds.
 */
function timed(
  ctx: WorkerContext,
  slowMs: number,
  signal: AbortSignal,
  check: (signal: AbortSignal) => Promise<unknown>,
): Promise<ProbeResult> {
  return measured(ctx, slowMs, signal, async () => {
    const settled = new AbortController();
    const timeout = AbortSignal.any([signal, settled.signal, AbortSignal.timeout(probeTimeoutMs)]);
    try {
      return await Promise.race([
        check(timeout),
        sleep(probeTimeoutMs, undefined, { signal: timeout }).then(() => {
          throw new Error('probe timed out');
        }),
      ]);
    } finally {
      settled.abort();
    }
  });
}

/**
 * The probe of each status component (DESIGN.md), in display order; built by the worker's start-up
 * and handed to the status__probe task.
 */
export function makeProbes(): Map<string, Probe> {
  return new Map<string, Probe>([
    [
      'api',
      (ctx, signal) =>
        timed(ctx, 1000, signal, async (s) => {
          const res = await fetch(`${ctx.config.publicBaseUrl}/healthz`, { signal: s });
          if (!res.ok) throw new Error(`api answered ${res.status}`);
        }),
    ],
    [
      'workers',
      async (ctx) => {
        // Alive as the reaper judges it (WORKER_STALE_AFTER_MS), so the page and the reaper agree.
        const live = await countLiveWorkerProcesses(ctx.pool, ctx.config.workerStaleAfterMs / 1000);
        return { state: live > 0 ? 'operational' : 'outage', latencyMs: null };
      },
    ],
    [
      'database',
      (ctx, signal) => timed(ctx, 250, signal, () => ctx.pool.query(sql.typeAlias('void')`select`)),
    ],
    [
      'storage',
      (ctx, signal) =>
        timed(ctx, 1000, signal, async () => {
          const key = `_probes/${process.pid}-${Date.now()}`;
          await ctx.objectStore.put(key, Buffer.from('probe'));
          const body = await ctx.objectStore.getBuffer(key);
          await ctx.objectStore.remove(key);
          if (body.toString() !== 'probe') throw new Error('storage returned other bytes');
        }),
    ],
    ['ocr', ocrProbe],
  ]);
}

const probeText = '2024 0615 3789';
let probeImage: Buffer | undefined;
// OCR of a line takes ~0.3 s once the engine is warm; a cold start loads the language data first.
const ocrProbeSlowMs = 5000;
const ocrProbeTimeoutMs = 20_000;

/**
 * The probe's own engine (WorkerContext.probeOcr): the same tesseract, languages and code path as
 * the jobs' engines, but never queued behind them. So the probe answers whether OCR works in this
 * process; a backlog shows in the jobs' waiting, not as an outage. Idle, it ends after a minute like
 * any engine, so it costs memory about one minute in five.
 */
export function makeProbeOcr() {
  return makeTesseractOcr({ engines: 1, timeoutMs: ocrProbeTimeoutMs });
}

/** One read of the probe image; throws when the engine fails or reads other text. */
async function readProbeImage(ctx: WorkerContext, signal: AbortSignal): Promise<void> {
  probeImage ??= renderDigitsPng(probeText);
  const out = await ctx.probeOcr.extract({
    data: probeImage,
    mimeType: 'image/png',
    filename: undefined,
    languageHint: 'en',
    // Bounded by the probe engine's own timeout (ocrProbeTimeoutMs).
    signal,
  });
  if (out.text.replace(/\s+/g, '') !== probeText.replace(/\s+/g, '')) {
    throw new Error(`OCR probe read '${out.text}'`);
  }
}

/**
 * The `ocr` status component: reads an image with known digits through the same engine code live
 * jobs use, on an engine of its own (makeProbeOcr). Wrong text is an outage as much as an error is:
 * the engine answered, but not usefully. Like the other probes, a failure is tried twice more, a
 * second apart, before it counts.
 */
export const ocrProbe: Probe = (ctx, signal) =>
  measured(ctx, ocrProbeSlowMs, signal, () => readProbeImage(ctx, signal), 'ocr status probe failed');
