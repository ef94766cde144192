import { setTimeout as sleep } from 'node:timers/promises';

import type { Task } from 'graphile-worker';

import { ocrJobInput } from '../../shared/generationJobs.ts';
import { loadPrices, ocrCost } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import {
  callProvider,
  cancelledOutcome,
  removeFinishedJobInput,
  withInputObject,
} from '../generationWork.ts';
import { type Probe, registerProbe } from '../probes.ts';
import { renderDigitsPng } from '../providers/bitmapText.ts';
import { selectProviders } from '../providers/index.ts';
import { runJob } from '../runJob.ts';

// The API's language vocabulary (languageHint) for tesseract's codes.
const apiLanguage: Record<string, string> = { eng: 'en', nep: 'ne' };

/**
 * POST /ocr: reads the uploaded image with the live OCR provider (local tesseract), billed per
 * page. The job result carries the text (spec "Job"); the upload is deleted once the job finished.
 */
export function ocrExtract(ctx: WorkerContext): Task {
  registerProbe('ocr', ocrProbe);
  const prices = loadPrices(ctx.config);
  return async (payload, helpers) => {
    await runJob(ctx, payload, helpers, async (job, signal) => {
      const input = ocrJobInput.parse(job.input);
      const provider = selectProviders(ctx.config, job.livemode).ocr;
      const out = await withInputObject(ctx, input, (data) =>
        callProvider(helpers, signal, () =>
          provider.extract({
            data,
            mimeType: input.mimeType,
            filename: input.filename,
            languageHint: input.languageHint,
            signal,
          }),
        ),
      );
      if (out === 'cancelled') return cancelledOutcome;
      return {
        result: {
          text: out.text,
          pages: out.pages,
          languages: out.languages.map((l) => apiLanguage[l] ?? l),
          model: out.model,
        },
        usage: { pages: out.pages },
        costMinor: job.livemode ? ocrCost(prices, out.pages) : 0,
      };
    });
    await removeFinishedJobInput(ctx, payload);
  };
}

const probeText = '2024 0615 3789';
let probeImage: Buffer | undefined;
// OCR of a line takes ~0.3 s once the engine is warm; a cold start loads the language data first.
const probeSlowMs = 5000;
const probeTimeoutMs = 20_000;

/** One read of the probe image; throws when the engine fails or reads other text. */
async function readProbeImage(ctx: WorkerContext, signal: AbortSignal): Promise<void> {
  probeImage ??= renderDigitsPng(probeText);
  const out = await selectProviders(ctx.config, true).ocr.extract({
    data: probeImage,
    mimeType: 'image/png',
    filename: undefined,
    languageHint: 'en',
    signal: AbortSignal.any([signal, AbortSignal.timeout(probeTimeoutMs)]),
  });
  if (out.text.replace(/\s+/g, '') !== probeText.replace(/\s+/g, '')) {
    throw new Error(`OCR probe read '${out.text}'`);
  }
}

/**
 * The `ocr` status component: reads an image with known digits through the same provider live jobs
 * use. Wrong text is an outage as much as an error is: the engine answered, but not usefully. Like
 * the other probes, a failure is tried twice more, a second apart, before it counts.
 */
export const ocrProbe: Probe = async (ctx, signal) => {
  for (let attempt = 1; ; attempt++) {
    const started = performance.now();
    try {
      await readProbeImage(ctx, signal);
      const latencyMs = Math.round(performance.now() - started);
      return { state: latencyMs > probeSlowMs ? 'degraded' : 'operational', latencyMs };
    } catch (error) {
      if (attempt >= 3 || signal.aborted) {
        ctx.logger.warn({ err: error }, 'ocr status probe failed');
        return { state: 'outage', latencyMs: null };
      }
      await sleep(1000);
    }
  }
};
