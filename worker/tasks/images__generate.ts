import { imageCost } from '../../shared/config/prices.ts';
import { answeredPrices } from '../../shared/config/routePrices.ts';
import { imageJobInput } from '../../shared/jobs/generationInputs.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome } from '../generationWork.ts';
import type { InlineJobDefinition } from '../jobEngine.ts';

/** POST /images: one image, billed per image. */
export function imagesGenerate(ctx: WorkerContext): InlineJobDefinition {
  const { prices } = ctx.config;
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
        costMinor: job.livemode
          ? imageCost(answeredPrices(ctx.config.providers, 'image', image.answeredBy, prices), 1)
          : 0,
      };
    },
  };
}
