import { AppError } from '../../../shared/errors/appError.ts';
import type { ChatJobResult } from '../../../shared/jobs/generationInputs.ts';
import type { StreamFailure, TextStreamFormat } from '../../sse/textStream.ts';
import type { ChatOutcome } from '../chatJob.ts';
import { openAiError } from './errors.ts';

/** What a finished chat job gives a compatible answer: its result, and the job's settled cost. */

type Identity = { id: string; created: number };

/** The completion's id and time: from the request id, so an answer names the request that made it. */
export function completionIdentity(requestId: string): Identity {
  return { id: `chatcmpl-${requestId.replace(/^req_/, '')}`, created: Math.floor(Date.now() / 1000) };
}

function finishReason(result: ChatJobResult): 'stop' | 'length' | 'tool_calls' {
  if (result.toolCalls?.length) return 'tool_calls';
  return result.finishReason === 'length' ? 'length' : 'stop';
}

/** OpenAI's usage: prompt (cached part included, as OpenAI counts it), completion and cached tokens. */
export function openAiUsage(result: ChatJobResult) {
  const { inputTokens, outputTokens } = result.usage;
  return {
    prompt_tokens: inputTokens,
    completion_tokens: outputTokens,
    total_tokens: inputTokens + outputTokens,
    prompt_tokens_details: { cached_tokens: result.cachedInputTokens ?? 0 },
  };
}

/** The `chat.completion` answer of a finished job. */
export function completionBody(identity: Identity, { result }: ChatOutcome) {
  return {
    ...identity,
    object: 'chat.completion',
    model: result.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: result.toolCalls?.length && result.text === '' ? null : result.text,
          ...(result.toolCalls?.length ? { tool_calls: result.toolCalls } : {}),
        },
        finish_reason: finishReason(result),
        logprobs: null,
      },
    ],
    usage: openAiUsage(result),
  };
}

/**
 * OpenAI's stream: `chat.completion.chunk` events (the first delta names the role, as the SDKs
 * expect), the tool calls whole in one chunk at the end (they arrive with the job's result), a chunk
 * with the finish reason, the usage chunk when `stream_options.include_usage` asked for it, then
 * `data: [DONE]`. A failure mid-stream is an `error` event in OpenAI's envelope, which the SDK
 * raises as an APIError.
 */
export function openAiChatStream(
  identity: Identity,
  model: string,
  includeUsage: boolean,
): TextStreamFormat<ChatOutcome> {
  let roleSent = false;
  const chunk = (
    delta: Record<string, unknown>,
    finish: string | null,
    extra: Record<string, unknown> = {},
  ) => {
    const withRole = roleSent ? delta : { role: 'assistant', ...delta };
    roleSent = true;
    const body = {
      ...identity,
      object: 'chat.completion.chunk',
      model,
      choices: [{ index: 0, delta: withRole, finish_reason: finish, logprobs: null }],
      ...extra,
    };
    return `data: ${JSON.stringify(body)}\n\n`;
  };
  return {
    status: 200,
    delta: (text) => chunk({ content: text }, null),
    done: ({ result }) => {
      const calls = result.toolCalls?.length
        ? chunk({ tool_calls: result.toolCalls.map((call, index) => ({ index, ...call })) }, null)
        : '';
      const usage = includeUsage
        ? `data: ${JSON.stringify({ ...identity, object: 'chat.completion.chunk', model: result.model, choices: [], usage: openAiUsage(result) })}\n\n`
        : '';
      return `${calls}${chunk({}, finishReason(result))}${usage}data: [DONE]\n\n`;
    },
    error: (failure: StreamFailure) => {
      const shaped = openAiError(new AppError(failure.code, failure.message), failure.requestId);
      return { frame: `data: ${JSON.stringify(shaped.body)}\n\n`, logged: shaped.body };
    },
    logged: (outcome) => completionBody(identity, outcome),
  };
}
