import type { Task } from 'graphile-worker';

import { transcriptionJobInput } from '../../shared/generationJobs.ts';
import { loadPrices, transcriptionCost } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import {
  callProvider,
  cancelledOutcome,
  removeFinishedJobInput,
  withInputObject,
} from '../generationWork.ts';
import { selectProviders } from '../providers/index.ts';
import { runJob } from '../runJob.ts';

/**
 * POST /transcriptions: the audio the api streamed to object storage, billed per audio second.
 * The upload is deleted once the job has finished (not before: a retry after a crash reads it again).
 */
export function transcriptionsCreate(ctx: WorkerContext): Task {
  const prices = loadPrices(ctx.config);
  return async (payload, helpers) => {
    await runJob(ctx, payload, helpers, async (job, signal) => {
      const input = transcriptionJobInput.parse(job.input);
      const provider = selectProviders(ctx.config, job.livemode).transcription;
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
    });
    await removeFinishedJobInput(ctx, payload);
  };
}
