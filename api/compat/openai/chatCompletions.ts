import type { RequestHandler } from 'express';

import { maxTextCost, maxTokensOf } from '../../../shared/config/prices.ts';
import { startBilledJob } from '../../../shared/jobs/billedJob.ts';
import { chatJobResult } from '../../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../../shared/jobs/syncJob.ts';
import type { AppDeps } from '../../deps.ts';
import { clientSignal } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { tokenReservation } from '../../http/tokenHeaders.ts';
import { streamTextJob } from '../../sse/textStream.ts';
import { chosenRoute, routeHas, routeIsOpenAi } from '../modelChoice.ts';
import { compatProject } from '../project.ts';
import { type ChatOutcome, completionBody, completionIdentity, openAiChatStream } from './chatAnswer.ts';
import { type ChatBody, chatJobInput, chatTexts } from './chatRequest.ts';

/**
 * POST /chat/completions: the text.generate job POST /text runs (same hold, token reservation,
 * metering, fallback and billing at the answering provider), with OpenAI's request and answer; a
 * stream is relayed through LISTEN/NOTIFY as POST /text's is, in OpenAI's chunks.
 */
export function chatCompletions(deps: AppDeps): RequestHandler {
  const { text: prices } = deps.config.reservationPrices;
  const { providers } = deps.config;
  return async (req, res) => {
    const body = req.body as ChatBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(providers, 'text', body.model);
    const stream = body.stream === true;
    const viaAnthropic = routeHas(providers, route, 'anthropic');
    const input = chatJobInput(body, route, routeIsOpenAi(providers, route), stream, viaAnthropic);
    const projectId = compatProject(req, 'openai-project');
    const texts = chatTexts(input);
    const maxCostMinor = maxTextCost(prices, { texts, maxOutputTokens: input.maxTokens });
    const tokens = tokenReservation(res, texts.reduce((n, t) => n + maxTokensOf(t), 0) + input.maxTokens);
    const job = { type: 'text.generate', projectId, input, maxCostMinor, tokens } as const;
    const identity = completionIdentity(req.requestId);
    const toOutcome = (result: unknown, costMinor: number): ChatOutcome => {
      settledCost(req, res, costMinor);
      const parsed = chatJobResult.parse(result);
      return { text: parsed.text, result: parsed };
    };
    if (stream) {
      const format = openAiChatStream(identity, body.model, body.stream_options?.include_usage === true);
      return streamTextJob(
        deps,
        deps.textDeltas,
        req,
        res,
        toOutcome,
        (id) => startBilledJob(deps, req, { ...job, id }),
        format,
      );
    }
    const { result, costMinor } = await runBilledJob(deps, req, job, clientSignal(res));
    res.status(200).json(completionBody(identity, toOutcome(result, costMinor)));
  };
}
