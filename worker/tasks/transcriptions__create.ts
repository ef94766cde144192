import { transcriptionJobInput } from '../../shared/jobs/generationInputs.ts';
import { transcriptionCost } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome, removeJobInput, withInputObject } from '../generationWork.ts';
import type { InlineJobDefinition } from '../jobEngine.ts';

/**
 * POST /transcriptions: the audio the api streamed to object storage, billed per audio second.
 * The upload is deleted once the job has finished (not before: a retry after a crash reads it again).
 */
export function transcriptionsCreate(ctx: WorkerContext): InlineJobDefinition {
  const { prices } = ctx.config;
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = transcriptionJobInput.parse(job.input);
      const provider = ctx.providers(job.livemode).transcription;
      const out = await withInputObject(ctx, input, (audio) =>
        callProvider(helpers, signal, () =>
          provider.transcribe({
            audio,
            mimeType: input.mimeType,
            filename: input.filename,
            prompt: input.prompt,
            language: input.language,
            signal,
          }),
        ),
      );
      if (out === 'cancelled') return cancelledOutcome;
      return {
        result: { text: out.text, model: out.model, durationSeconds: out.durationSeconds },
        usage: { audioSeconds: out.durationSeconds },
        costMinor: job.livemode ? transcriptionCost(prices, out.durationSeconds) : 0,
      };
    },
    afterFinished: (job) => removeJobInput(ctx, job),
  };
}
