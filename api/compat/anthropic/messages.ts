import type { RequestHandler } from 'express';

import { estimateTokens } from '../../../shared/providers/tokens.ts';
import type { AppDeps } from '../../deps.ts';
import { chatTexts, runChatJob } from '../chatJob.ts';
import { chosenRoute } from '../modelChoice.ts';
import { compatProject } from '../project.ts';
import { projectHeader } from './headers.ts';
import { anthropicMessageStream, messageBody, messageIdentity } from './messageAnswer.ts';
import { type MessagesBody, messagesJobInput } from './messageRequest.ts';

/**
 * POST /v1/messages: the text.generate job POST /text runs (same hold, token reservation, metering,
 * fallback and billing at the answering provider), with Anthropic's request and answer; a stream is
 * relayed through LISTEN/NOTIFY as POST /text's is, in Anthropic's events.
 */
export function messages(deps: AppDeps): RequestHandler {
  const { providers } = deps.config;
  return async (req, res) => {
    const body = req.body as MessagesBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(providers, 'text', body.model);
    const input = messagesJobInput(body, route, providers, req.get('anthropic-version'));
    const projectId = compatProject(req, projectHeader);
    const identity = messageIdentity(req.requestId);
    // message_start names an input count before the provider's: the estimate the hold was made with.
    const estimated = chatTexts(input).reduce((n, t) => n + estimateTokens(t), 0);
    const format = input.stream ? anthropicMessageStream(identity, body.model, estimated) : undefined;
    const outcome = await runChatJob(deps, req, res, { input, projectId, format });
    if (outcome) res.status(200).json(messageBody(identity, outcome));
  };
}
