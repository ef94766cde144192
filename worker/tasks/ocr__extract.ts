import { ocrJobInput } from '../../shared/jobs/generationInputs.ts';
import { ocrCost } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome, removeJobInput, withInputObject } from '../generationWork.ts';
import type { JobDefinition } from '../jobEngine.ts';

// The API's language vocabulary (languageHint) for tesseract's codes.
const apiLanguage: Record<string, string> = { eng: 'en', nep: 'ne' };

/**
 * POST /ocr: reads the uploaded image with the live OCR provider (local tesseract), billed per
 * page. The job result carries the text (spec "Job"); the upload is deleted once the job finished.
 */
export function ocrExtract(ctx: WorkerContext): JobDefinition {
  const { prices } = ctx.config;
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = ocrJobInput.parse(job.input);
      const provider = ctx.providers(job.livemode).ocr;
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
    },
    afterFinished: (job) => removeJobInput(ctx, job),
  };
}
