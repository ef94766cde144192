import type { RequestHandler } from 'express';

import { maxTextCost, maxTokensOf } from '../../../shared/config/prices.ts';
import { startBilledJob } from '../../../shared/jobs/billedJob.ts';
import { chatJobResult } from '../../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../../shared/jobs/syncJob.ts';
import { estimateTokens } from '../../../shared/providers/tokens.ts';
import type { AppDeps } from '../../deps.ts';
import { clientSignal } from '../../http/clientGone.ts';
import { settledCost } from '../../http/settledCost.ts';
import { tokenReservation } from '../../http/tokenHeaders.ts';
import { streamTextJob } from '../../sse/textStream.ts';
import { chosenRoute } from '../modelChoice.ts';
import { compatProject } from '../project.ts';
import { projectHeader } from './headers.ts';
import {
  anthropicMessageStream,
  messageBody,
  messageIdentity,
  type MessageOutcome,
} from './messageAnswer.ts';
import { type MessagesBody, messagesJobInput } from './messageRequest.ts';

/**
 * POST /v1/messages: the text.generate job POST /text runs (same hold, token reservation, metering,
 * fallback and billing at the answering provider), with Anthropic's request and answer; a stream is
 * relayed through LISTEN/NOTIFY as POST /text's is, in Anthropic's events.
 */
export function messages(deps: AppDeps): RequestHandler {
  const { text: prices } = deps.config.reservationPrices;
  const { providers } = deps.config;
  return async (req, res) => {
    const body = req.body as MessagesBody; // shape enforced by the OpenAPI validator
    const route = chosenRoute(providers, 'text', body.model);
    const input = messagesJobInput(body, route, providers, req.get('anthropic-version'));
    const projectId = compatProject(req, projectHeader);
    const texts = input.messages!.map((m) => m.content);
    const maxCostMinor = maxTextCost(prices, { texts, maxOutputTokens: input.maxTokens });
    const tokens = tokenReservation(res, texts.reduce((n, t) => n + maxTokensOf(t), 0) + input.maxTokens);
    const job = { type: 'text.generate', projectId, input, maxCostMinor, tokens } as const;
    const identity = messageIdentity(req.requestId);
    const toOutcome = (result: unknown, costMinor: number): MessageOutcome => {
      settledCost(req, res, costMinor);
      const parsed = chatJobResult.parse(result);
      return { text: parsed.text, result: parsed };
    };
    if (input.stream) {
      const estimated = texts.reduce((n, t) => n + estimateTokens(t), 0);
      const format = anthropicMessageStream(identity, body.model, estimated);
      const start = (id: string) => startBilledJob(deps, req, { ...job, id });
      return streamTextJob(deps, deps.textDeltas, req, res, toOutcome, start, format);
    }
    const { result, costMinor } = await runBilledJob(deps, req, job, clientSignal(res));
    res.status(200).json(messageBody(identity, toOutcome(result, costMinor)));
  };
}
