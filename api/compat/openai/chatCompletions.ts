import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { runChatJob } from '../chatJob.ts';
import { chosenRoute, routeHas, routeIsOpenAi } from '../modelChoice.ts';
import { compatProject } from '../project.ts';
import { completionBody, completionIdentity, openAiChatStream } from './chatAnswer.ts';
import { type ChatBody, chatJobInput } from './chatRequest.ts';

/**
 * POST /chat/completions: the text.generate job POST /text runs (same hold, token reservation,
 * metering, fallback and billing at the answering provider), with OpenAI's request and answer; a
 * stream is relayed through LISTEN/NOTIFY as POST /text's is, in OpenAI's chunks.
 */
export function chatCompletions(deps: AppDeps): RequestHandler {
  const { providers } = deps.config;
  return async (req, res) => {
    const body = req.body as ChatBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(providers, 'text', body.model);
    const stream = body.stream === true;
    const viaAnthropic = routeHas(providers, route, 'anthropic');
    const input = chatJobInput(body, route, routeIsOpenAi(providers, route), stream, viaAnthropic);
    const projectId = compatProject(req, 'openai-project');
    const identity = completionIdentity(req.requestId);
    const includeUsage = body.stream_options?.include_usage === true;
    const format = stream ? openAiChatStream(identity, body.model, includeUsage) : undefined;
    const outcome = await runChatJob(deps, req, res, { input, projectId, format });
    if (outcome) res.status(200).json(completionBody(identity, outcome));
  };
}
