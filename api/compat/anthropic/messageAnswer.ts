import { AppError } from '../../../shared/errors/appError.ts';
import type { ChatJobResult } from '../../../shared/jobs/generationInputs.ts';
import type { StreamFailure, TextStreamFormat } from '../../sse/textStream.ts';
import type { ChatOutcome } from '../chatJob.ts';
import { anthropicError } from './errors.ts';

/** What a finished text job gives an Anthropic answer: its text, and its whole result. */

type Identity = { id: string };

/** The message's id: from the request id, so an answer names the request that made it. */
export function messageIdentity(requestId: string): Identity {
  return { id: `msg_${requestId.replace(/^req_/, '')}` };
}

/** Why the answer ended, in Anthropic's words: its budget, one of the caller's stop sequences, or its end. */
function stopOf(result: ChatJobResult) {
  if (result.finishReason === 'length') return { stop_reason: 'max_tokens', stop_sequence: null };
  if (result.stopSequence !== undefined) {
    return { stop_reason: 'stop_sequence', stop_sequence: result.stopSequence };
  }
  return { stop_reason: 'end_turn', stop_sequence: null };
}

/**
 * Anthropic's usage: its input_tokens are the prompt's uncached part only, beside the tokens read
 * from and written to the prompt cache (the platform's inputTokens is the whole prompt).
 */
export function anthropicUsage(result: ChatJobResult) {
  const read = result.cachedInputTokens ?? 0;
  const written = result.cacheWriteInputTokens ?? 0;
  return {
    input_tokens: Math.max(0, result.usage.inputTokens - read - written),
    output_tokens: result.usage.outputTokens,
    cache_creation_input_tokens: written,
    cache_read_input_tokens: read,
  };
}

/** The `message` answer of a finished job: one text block. */
export function messageBody(identity: Identity, { result }: ChatOutcome) {
  return {
    ...identity,
    type: 'message',
    role: 'assistant',
    model: result.model,
    content: [{ type: 'text', text: result.text }],
    ...stopOf(result),
    usage: anthropicUsage(result),
  };
}

const event = (type: string, data: Record<string, unknown> = {}) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/**
 * Anthropic's stream: message_start, content_block_start (one text block) and ping before the
 * first text, a content_block_delta (text_delta) per piece, then content_block_stop, message_delta
 * with the stop reason and the whole usage, and message_stop. message_start names the model the
 * caller asked for and the prompt's estimated tokens: which provider answers, and its count, are
 * known only at the end (message_delta's usage, which the SDK lays over message_start's). A failure
 * mid-stream is an `error` event in Anthropic's shape, which the SDK raises as an APIError.
 */
export function anthropicMessageStream(
  identity: Identity,
  model: string,
  estimatedInputTokens: number,
): TextStreamFormat<ChatOutcome> {
  let opened = false;
  const head = () => {
    if (opened) return '';
    opened = true;
    const message = {
      ...identity,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: estimatedInputTokens, output_tokens: 0 },
    };
    return (
      event('message_start', { message }) +
      event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
      event('ping')
    );
  };
  return {
    status: 200,
    delta: (text) => head() + event('content_block_delta', { index: 0, delta: { type: 'text_delta', text } }),
    done: ({ result }) =>
      head() +
      event('content_block_stop', { index: 0 }) +
      event('message_delta', { delta: stopOf(result), usage: anthropicUsage(result) }) +
      event('message_stop'),
    error: (failure: StreamFailure) => {
      const shaped = anthropicError(new AppError(failure.code, failure.message), failure.requestId);
      const body = shaped.body as Record<string, unknown>;
      return { frame: event('error', body), logged: body };
    },
    logged: (outcome) => messageBody(identity, outcome),
  };
}
