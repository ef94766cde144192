import { transcriptionCost } from '../../shared/config/prices.ts';
import { transcriptionJobInput } from '../../shared/jobs/generationInputs.ts';
import type { WorkerContext } from '../context.ts';
import { billedAt, uploadedInputJob } from '../generationWork.ts';
import type { InlineJobDefinition } from '../jobEngine.ts';

/**
 * POST /transcriptions: the audio the api streamed to object storage, billed per audio second.
 * The upload is deleted once the job has finished (not before: a retry after a crash reads it again).
 */
export function transcriptionsCreate(ctx: WorkerContext): InlineJobDefinition {
  return uploadedInputJob(ctx, {
    parse: (input) => transcriptionJobInput.parse(input),
    call: (providers, input, { data, ...file }) =>
      providers.transcription.transcribe({
        ...file,
        audio: data,
        prompt: input.prompt,
        language: input.language,
        route: input.route,
      }),
    outcome: (out, livemode) => ({
      result: { text: out.text, model: out.model, durationSeconds: out.durationSeconds },
      usage: { audioSeconds: out.durationSeconds },
      ...billedAt(ctx, 'transcription', out, livemode, (prices) =>
        transcriptionCost(prices, out.durationSeconds),
      ),
    }),
  });
}
