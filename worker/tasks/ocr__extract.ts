import { ocrCost } from '../../shared/config/prices.ts';
import { ocrJobInput } from '../../shared/jobs/generationInputs.ts';
import type { WorkerContext } from '../context.ts';
import { uploadedInputJob } from '../generationWork.ts';
import type { JobDefinition } from '../jobEngine.ts';

// The API's language vocabulary (languageHint) for tesseract's codes.
const apiLanguage: Record<string, string> = { eng: 'en', nep: 'ne' };

/**
 * POST /ocr: reads the uploaded image with the live OCR provider (local tesseract), billed per
 * page. The job result carries the text (spec "Job"); the upload is deleted once the job finished.
 */
export function ocrExtract(ctx: WorkerContext): JobDefinition {
  const { prices } = ctx.config;
  return uploadedInputJob(ctx, {
    parse: (input) => ocrJobInput.parse(input),
    call: (providers, input, file) => providers.ocr.extract({ ...file, languageHint: input.languageHint }),
    outcome: (out, livemode) => ({
      result: {
        text: out.text,
        pages: out.pages,
        languages: out.languages.map((l) => apiLanguage[l] ?? l),
        model: out.model,
      },
      usage: { pages: out.pages },
      costMinor: livemode ? ocrCost(prices, out.pages) : 0,
    }),
  });
}
