import type { Task } from 'graphile-worker';

import { embeddingJobInput } from '../../shared/generationJobs.ts';
import { embeddingCost, loadPrices } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome } from '../generationWork.ts';
import { selectProviders } from '../providers/index.ts';
import { runJob } from '../runJob.ts';

/** POST /embeddings: one vector per input, in input order, billed by input tokens. */
export function embeddingsCreate(ctx: WorkerContext): Task {
  const prices = loadPrices(ctx.config);
  return (payload, helpers) =>
    runJob(ctx, payload, helpers, async (job, signal) => {
      const { input } = embeddingJobInput.parse(job.input);
      const provider = selectProviders(ctx.config, job.livemode).embeddings;
      const out = await callProvider(helpers, signal, () => provider.embed({ input, signal }));
      if (out === 'cancelled') return cancelledOutcome;
      return {
        result: { embeddings: out.vectors, model: out.model, usage: out.usage },
        usage: out.usage,
        costMinor: job.livemode ? embeddingCost(prices, out.usage.inputTokens) : 0,
      };
    });
}
