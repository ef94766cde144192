import type { Task } from 'graphile-worker';

import { imageJobInput } from '../../shared/generationJobs.ts';
import { imageCost, loadPrices } from '../../shared/prices.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome } from '../generationWork.ts';
import { selectProviders } from '../providers/index.ts';
import { runJob } from '../runJob.ts';

/** POST /images: one image, billed per image. */
export function imagesGenerate(ctx: WorkerContext): Task {
  const prices = loadPrices(ctx.config);
  return (payload, helpers) =>
    runJob(ctx, payload, helpers, async (job, signal) => {
      const input = imageJobInput.parse(job.input);
      const provider = selectProviders(ctx.config, job.livemode).images;
      const image = await callProvider(helpers, signal, () => provider.generate({ ...input, signal }));
      if (image === 'cancelled') return cancelledOutcome;
      return {
        result: {
          image: { b64: image.b64, mimeType: image.mimeType },
          model: image.model,
          usage: image.usage,
        },
        usage: { images: 1, ...image.usage },
        costMinor: job.livemode ? imageCost(prices, 1) : 0,
      };
    });
}
