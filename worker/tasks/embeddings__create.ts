import { embeddingCost } from '../../shared/config/prices.ts';
import { embeddingJobInput } from '../../shared/jobs/generationInputs.ts';
import type { WorkerContext } from '../context.ts';
import { billedAt, callProvider, cancelledOutcome } from '../generationWork.ts';
import type { InlineJobDefinition } from '../jobEngine.ts';

/** POST /embeddings: one vector per input, in input order, billed by input tokens. */
export function embeddingsCreate(ctx: WorkerContext): InlineJobDefinition {
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = embeddingJobInput.parse(job.input);
      const provider = ctx.providers(job.livemode).embeddings;
      const out = await callProvider(helpers, signal, () => provider.embed({ ...input, signal }));
      if (out === 'cancelled') return cancelledOutcome;
      return {
        result: { embeddings: out.vectors, model: out.model, usage: out.usage },
        usage: out.usage,
        ...billedAt(ctx, 'embedding', out, job.livemode, (prices) =>
          embeddingCost(prices, out.usage.inputTokens),
        ),
      };
    },
  };
}
