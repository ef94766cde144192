import type { RequestHandler } from 'express';

import { imageCost } from '../../../shared/config/prices.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { type ImageJobInput, imageJobResult } from '../../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../../shared/jobs/syncJob.ts';
import type { AppDeps } from '../../deps.ts';
import { whileConnected } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { chosenRoute } from '../modelChoice.ts';
import { compatProject } from '../project.ts';

type ImagesBody = {
  prompt: string;
  model?: string;
  size?: string | null;
  response_format?: 'b64_json' | 'url' | null;
};

const ratios = ['1:1', '3:4', '9:16', '4:3', '16:9'] as const;

/** The aspect ratio of POST /images nearest to an OpenAI `size` (`1536x1024` → 4:3 … 16:9 by shape). */
export function aspectRatioOf(size: string | null | undefined): string {
  if (!size || size === 'auto') return '1:1';
  const [w, h] = size.split('x').map(Number) as [number, number];
  const wanted = Math.log(w / h);
  const distance = (r: string) => {
    const [a, b] = r.split(':').map(Number) as [number, number];
    return Math.abs(Math.log(a / b) - wanted);
  };
  return [...ratios].sort((a, b) => distance(a) - distance(b))[0]!;
}

/** POST /images/generations: the images.generate job of POST /images, answered as OpenAI's image list. */
export function imageGenerations(deps: AppDeps): RequestHandler {
  const { image: prices } = deps.config.reservationPrices;
  return async (req, res) => {
    const body = req.body as ImagesBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(deps.config.providers, 'image', body.model);
    if (body.prompt.length === 0 || body.prompt.length > 2000) {
      throw new AppError('invalid_generation_prompt', 'prompt must be 1 to 2000 characters.', {
        issues: [{ path: 'prompt', message: 'must be 1 to 2000 characters' }],
      });
    }
    const projectId = compatProject(req, 'openai-project');
    const input: ImageJobInput = {
      prompt: body.prompt,
      aspectRatio: aspectRatioOf(body.size),
      ...(route.name === 'default' ? {} : { route: route.name }),
    };
    const job = { type: 'images.generate', projectId, input, maxCostMinor: imageCost(prices, 1) } as const;
    const { result, costMinor } = await whileConnected(res, (signal) => runBilledJob(deps, req, job, signal));
    settledCost(req, res, costMinor);
    const { image } = imageJobResult.parse(result);
    // Generation stores nothing (spec): a URL answer carries the image itself.
    const data =
      body.response_format === 'url'
        ? { url: `data:${image.mimeType};base64,${image.b64}` }
        : { b64_json: image.b64 };
    res
      .status(200)
      .json({ created: Math.floor(Date.now() / 1000), data: [{ ...data, revised_prompt: body.prompt }] });
  };
}
