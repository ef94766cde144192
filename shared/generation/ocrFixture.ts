import type { OcrJobInput } from '../jobs/generationInputs.ts';
import { fixtureProviders } from '../providers/fixtures.ts';

/** What a test key's OCR job is born with (spec: the fixture text), its usage metered at zero. */
export async function fixtureOcrOutcome(input: Omit<OcrJobInput, 'objectKey'>) {
  const out = await fixtureProviders.ocr.extract({
    ...input,
    data: Buffer.alloc(0),
    filename: input.filename,
    signal: new AbortController().signal,
  });
  return {
    result: { text: out.text, pages: out.pages, languages: ['en'], model: out.model },
    usage: { pages: out.pages },
  };
}
