import { imageCost } from '../../shared/config/prices.ts';
import { imageJobInput } from '../../shared/jobs/generationInputs.ts';
import type { WorkerContext } from '../context.ts';
import { billedAt, callProvider, cancelledOutcome } from '../generationWork.ts';
import type { InlineJobDefinition } from '../jobEngine.ts';

/** POST /images: one image, billed per image. */
export function imagesGenerate(ctx: WorkerContext): InlineJobDefinition {
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = imageJobInput.parse(job.input);
      const provider = ctx.providers(job.livemode).images;
      const image = await callProvider(helpers, signal, () => provider.generate({ ...input, signal }));
      if (image === 'cancelled') return cancelledOutcome;
      return {
        result: {
          image: { b64: image.b64, mimeType: image.mimeType },
          model: image.model,
          usage: image.usage,
        },
        usage: { images: 1, ...image.usage },
        ...billedAt(ctx, 'image', image, job.livemode, (prices) => imageCost(prices, 1)),
      };
    },
  };
}
