import type { Request, Response } from 'express';

import { maxTextCost, maxTokensOf } from '../../shared/config/prices.ts';
import { startBilledJob } from '../../shared/jobs/billedJob.ts';
import { type ChatJobResult, chatJobResult, type TextJobInput } from '../../shared/jobs/generationInputs.ts';
import { runBilledJob } from '../../shared/jobs/syncJob.ts';
import type { AppDeps } from '../deps.ts';
import { clientSignal } from '../http/clientGone.ts';
import { settledCost } from '../http/settledCost.ts';
import { tokenReservation } from '../http/tokenHeaders.ts';
import { streamTextJob, type TextStreamFormat } from '../sse/textStream.ts';

/** What a chat call produced, as a compatible API shapes its answer from it. */
export type ChatOutcome = { text: string; result: ChatJobResult };

/** Every text of a chat job that a model reads: what its cost and token holds are bounded by. */
export function chatTexts(input: TextJobInput): string[] {
  return [
    ...(input.messages ?? []).map((m) => m.content + (m.toolCalls ? JSON.stringify(m.toolCalls) : '')),
    ...(input.options?.tools ? [JSON.stringify(input.options.tools)] : []),
    ...(input.options?.responseFormat ? [JSON.stringify(input.options.responseFormat)] : []),
  ];
}

/**
 * A compatible API's chat call as POST /text runs it: the text.generate job (the same hold at the
 * route's dearest price, token reservation, metering, fallback and billing at the answering
 * provider), streamed through LISTEN/NOTIFY in the API's own events when `format` is given (the
 * answer is then sent, and undefined returned), else awaited and returned for the API to shape.
 */
export async function runChatJob(
  deps: AppDeps,
  req: Request,
  res: Response,
  call: { input: TextJobInput; projectId: string; format?: TextStreamFormat<ChatOutcome> },
): Promise<ChatOutcome | undefined> {
  const { input, projectId, format } = call;
  const texts = chatTexts(input);
  const { text: prices } = deps.config.reservationPrices;
  const maxCostMinor = maxTextCost(prices, { texts, maxOutputTokens: input.maxTokens });
  const tokens = tokenReservation(res, texts.reduce((n, t) => n + maxTokensOf(t), 0) + input.maxTokens);
  const job = { type: 'text.generate', projectId, input, maxCostMinor, tokens } as const;
  const toOutcome = (result: unknown, costMinor: number): ChatOutcome => {
    settledCost(req, res, costMinor);
    const parsed = chatJobResult.parse(result);
    return { text: parsed.text, result: parsed };
  };
  if (format) {
    const start = (id: string) => startBilledJob(deps, req, { ...job, id });
    await streamTextJob(deps, deps.textDeltas, req, res, toOutcome, start, format);
    return undefined;
  }
  const { result, costMinor } = await runBilledJob(deps, req, job, clientSignal(res));
  return toOutcome(result, costMinor);
}
