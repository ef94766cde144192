import type { RequestHandler } from 'express';

import { estimateTokens } from '../../../shared/providers/tokens.ts';
import type { AppDeps } from '../../deps.ts';
import { chosenRoute } from '../modelChoice.ts';
import { type PromptBody, promptMessages } from './messageRequest.ts';

/**
 * POST /v1/messages/count_tokens: the prompt's tokens as the platform estimates them (the estimate
 * its offline models count with), free and without a job: the api tier never asks a provider, and
 * a provider's exact count would cost a call on the worker fleet. The model and the prompt are
 * checked as POST /v1/messages checks them, so a prompt counted here is one it takes.
 * @throws AppError model_not_found, invalid_request_body.
 */
export function countTokens(deps: AppDeps): RequestHandler {
  return (req, res) => {
    const body = req.body as PromptBody; // shape enforced by the OpenAPI validator
    chosenRoute(deps.config.providers, 'text', body.model);
    const tokens = promptMessages(body).reduce((n, m) => n + estimateTokens(m.content), 0);
    res.status(200).json({ input_tokens: tokens });
  };
}
