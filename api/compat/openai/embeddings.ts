import type { RequestHandler } from 'express';

import { maxEmbeddingCost, maxTokensOf } from '../../../shared/config/prices.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { type EmbeddingJobInput, embeddingJobResult } from '../../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../../shared/jobs/syncJob.ts';
import type { AppDeps } from '../../deps.ts';
import { whileConnected } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { tokenReservation } from '../../http/tokenHeaders.ts';
import { chosenRoute, routeIsOpenAi } from '../modelChoice.ts';
import { compatProject } from '../project.ts';

type EmbeddingsBody = {
  model: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
};

const maxTextLength = 50_000;

/** A vector as OpenAI's base64 encoding: its float32 values, little-endian. */
function base64Vector(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}

/** POST /embeddings (OpenAI's): the embeddings.create job of POST /embeddings, answered as OpenAI's list. */
export function embeddings(deps: AppDeps): RequestHandler {
  const { embedding: prices } = deps.config.reservationPrices;
  const { providers } = deps.config;
  return async (req, res) => {
    const body = req.body as EmbeddingsBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(providers, 'embedding', body.model);
    const texts = typeof body.input === 'string' ? [body.input] : body.input;
    const issues = texts.flatMap((text, i) =>
      text.length === 0 || text.length > maxTextLength
        ? [{ path: `input.${i}`, message: `must be 1 to ${maxTextLength} characters` }]
        : [],
    );
    if (issues.length > 0) {
      throw new AppError('invalid_generation_prompt', 'Every input text must be 1 to 50000 characters.', {
        issues,
      });
    }
    // Only OpenAI's protocol has the field: any other provider would answer full-length vectors.
    if (body.dimensions !== undefined && !routeIsOpenAi(providers, route)) {
      throw new AppError('invalid_request_body', 'This model does not take dimensions.', {
        issues: [
          { path: 'dimensions', message: `the route of model '${route.name}' cannot shorten vectors` },
        ],
      });
    }
    const projectId = compatProject(req, 'openai-project');
    const input: EmbeddingJobInput = {
      input: texts,
      ...(route.name === 'default' ? {} : { route: route.name }),
      ...(body.dimensions === undefined ? {} : { dimensions: body.dimensions }),
    };
    const tokens = tokenReservation(
      res,
      texts.reduce((n, t) => n + maxTokensOf(t), 0),
    );
    const job = {
      type: 'embeddings.create',
      projectId,
      input,
      maxCostMinor: maxEmbeddingCost(prices, texts),
      tokens,
    } as const;
    const { result, costMinor } = await whileConnected(res, (signal) => runBilledJob(deps, req, job, signal));
    settledCost(req, res, costMinor);
    const out = embeddingJobResult.parse(result);
    const base64 = body.encoding_format === 'base64';
    res.status(200).json({
      object: 'list',
      data: out.embeddings.map((vector, index) => ({
        object: 'embedding',
        index,
        embedding: base64 ? base64Vector(vector) : vector,
      })),
      model: out.model,
      usage: { prompt_tokens: out.usage.inputTokens, total_tokens: out.usage.inputTokens },
    });
  };
}
