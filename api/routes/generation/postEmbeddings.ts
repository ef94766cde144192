import type { RequestHandler } from 'express';

import { maxEmbeddingCost, maxTokensOf } from '../../../shared/config/prices.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { type EmbeddingJobInput, embeddingJobResult } from '../../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../../shared/jobs/syncJob.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { whileConnected } from '../../http/clientGone.ts';
import { openResponseCache } from '../../http/responseCache.ts';
import { settledCost } from '../../http/settledCost.ts';
import { tokenReservation } from '../../http/tokenHeaders.ts';

const maxEmbeddingTextLength = 50_000;

type EmbeddingsBody = { input: string[]; projectId?: string };

/** POST /embeddings: one vector per input text, in input order, computed by a worker. */
export function postEmbeddings(deps: AppDeps): RequestHandler {
  const { embedding: prices } = deps.config.reservationPrices;
  return async (req, res) => {
    const body = req.body as EmbeddingsBody; // shape (1 to 100 texts) enforced by the OpenAPI validator
    const issues = body.input.flatMap((text, i) =>
      text.length === 0 || text.length > maxEmbeddingTextLength
        ? [{ path: `input.${i}`, message: `must be 1 to ${maxEmbeddingTextLength} characters` }]
        : [],
    );
    if (issues.length > 0) {
      throw new AppError('invalid_generation_prompt', 'Every input text must be 1 to 50000 characters.', {
        issues,
      });
    }
    const projectId = resolveProject(req);
    const input: EmbeddingJobInput = { input: body.input };
    const maxCostMinor = maxEmbeddingCost(prices, body.input);
    const tokens = tokenReservation(
      res,
      body.input.reduce((n, t) => n + maxTokensOf(t), 0),
    );
    const job = { type: 'embeddings.create', projectId, input, maxCostMinor, tokens } as const;
    // A hit calls no model: it reserves no tokens (the job that would is never started).
    const cache = await openResponseCache(deps, req, res, {
      capability: 'embedding',
      operation: job.type,
      request: { input: body.input },
      projectId,
    });
    if (cache?.hit) return res.status(201).json(cache.hit);
    const { result, costMinor } = await whileConnected(res, (signal) => runBilledJob(deps, req, job, signal));
    const answer = { ...embeddingJobResult.parse(result), cost: settledCost(req, res, costMinor) };
    await cache?.store(answer);
    res.status(201).json(answer);
  };
}
