import type OpenAI from 'openai';
import { z } from 'zod';

import { toStorableText } from '../../shared/primitives/storableText.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import {
  type ChatMessage,
  type ChatOptions,
  type ChatProvider,
  ProviderError,
  type TextGeneration,
  type TextUsage,
  type ToolCall,
} from '../../shared/providers/types.ts';
import { answerCut, callBounds } from './callBounds.ts';
import type { ProviderSettings } from './clientTypes.ts';
import { eventStreamTarget, postEventStream } from './eventStream.ts';
import { openAiFailure, parseAnswer } from './openaiFailure.ts';

// Whatever a provider answers is stored and relayed through PostgreSQL, which refuses some text.
const storableString = z.string().transform(toStorableText);

const chatChunk = z.object({
  model: storableString.optional(),
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: storableString.nullish(),
            // Streamed in pieces: the first of a call carries its id and name, the rest its arguments.
            tool_calls: z
              .array(
                z.object({
                  index: z.number().int().min(0).max(127),
                  id: storableString.nullish(),
                  function: z
                    .object({ name: storableString.nullish(), arguments: storableString.nullish() })
                    .nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .optional(),
  usage: z
    .object({
      prompt_tokens: z.number(),
      completion_tokens: z.number(),
      // Of prompt_tokens, those served from the provider's prompt cache (OpenAI caches on its own).
      prompt_tokens_details: z.object({ cached_tokens: z.number().int().min(0).nullish() }).nullish(),
    })
    .nullish(),
});

type ChunkUsage = NonNullable<z.infer<typeof chatChunk>['usage']>;
type ChatChunk = z.infer<typeof chatChunk>;

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The chunk of a plain text delta (no tool calls, no usage: nearly every chunk of an answer) read
 * without the schema, which costs a tenth of a millisecond a call over a dozen chunks; anything
 * else, or anything it is not sure of, goes through chatChunk. The same checks and transforms.
 */
function textChunk(raw: unknown): ChatChunk | undefined {
  if (!isPlainObject(raw) || (raw.usage !== undefined && raw.usage !== null)) return undefined;
  const { model, choices } = raw;
  if (model !== undefined && typeof model !== 'string') return undefined;
  if (choices !== undefined && !Array.isArray(choices)) return undefined;
  const read: NonNullable<ChatChunk['choices']> = [];
  for (const choice of (choices ?? []) as unknown[]) {
    if (!isPlainObject(choice)) return undefined;
    const { delta, finish_reason: finish } = choice;
    if (finish !== undefined && finish !== null && typeof finish !== 'string') return undefined;
    if (delta !== undefined && delta !== null) {
      if (!isPlainObject(delta) || (delta.tool_calls !== undefined && delta.tool_calls !== null))
        {return undefined;}
      const { content } = delta;
      if (content !== undefined && content !== null && typeof content !== 'string') return undefined;
      read.push({
        delta: { content: typeof content === 'string' ? toStorableText(content) : content },
        finish_reason: finish,
      });
    } else read.push({ delta, finish_reason: finish });
  }
  return {
    ...(model === undefined ? {} : { model: toStorableText(model) }),
    ...(choices === undefined ? {} : { choices: read }),
  };
}

/** The usage a generation reports: the provider's counts, with the cached part of the prompt when given. */
function textUsage(usage: ChunkUsage | undefined, estimated: TextUsage): TextUsage {
  if (!usage) return estimated;
  const cached = usage.prompt_tokens_details?.cached_tokens;
  return {
    inputTokens: usage.prompt_tokens,
    outputTokens: usage.completion_tokens,
    ...(cached ? { cachedInputTokens: Math.min(cached, usage.prompt_tokens) } : {}),
  };
}

type BudgetField = 'max_completion_tokens' | 'max_tokens';
type WireMessage = OpenAI.Chat.ChatCompletionMessageParam;
type WireCall = { messages: WireMessage[]; maxTokens: number; options: Record<string, unknown> };

/** A message on the wire: role and content, and a tool turn's links (requesterText is for the offline stand-ins). */
function wireMessage(message: ChatMessage): WireMessage {
  const { role, content } = message;
  if (role === 'tool') return { role, content, tool_call_id: message.toolCallId ?? '' };
  if (role === 'assistant' && message.toolCalls?.length) {
    return { role, content: content === '' ? null : content, tool_calls: message.toolCalls };
  }
  return { role, content };
}

/** The options a compatible API's caller set, under the protocol's names; nothing for the rest. */
function wireOptions(options: ChatOptions | undefined): Record<string, unknown> {
  if (!options) return {};
  const named: Record<string, unknown> = {
    temperature: options.temperature,
    top_p: options.topP,
    stop: options.stop,
    user: options.user,
    tools: options.tools,
    tool_choice: options.toolChoice,
    response_format: options.responseFormat,
  };
  return Object.fromEntries(Object.entries(named).filter(([, value]) => value !== undefined));
}

type PartialCall = { id: string; name: string; arguments: string };

/** A 400 that names the budget field: a server that does not know max_completion_tokens. */
function rejectsBudgetField(error: Error, field: BudgetField): boolean {
  return error instanceof ProviderError && error.status === 400 && error.message.includes(field);
}

/**
 * Chat completions, always streamed from the provider (over eventStream.ts, not the SDK: a fifth of
 * its CPU per answer): deltas reach `onDelta` as they arrive, and a cancellation mid-reply still
 * knows what was produced, so it can be billed for exactly that. The output budget goes as
 * max_completion_tokens (OpenAI's name; its reasoning models refuse max_tokens); a compatible server
 * that refuses that name gets max_tokens from then on.
 */
export function openAiChat(settings: ProviderSettings, model: string): ChatProvider {
  const path = '/chat/completions';
  const target = eventStreamTarget(settings.baseUrl, settings.apiKey, path);
  let budgetField: BudgetField = 'max_completion_tokens';
  const request = (call: WireCall, signal: AbortSignal, onChunk: (raw: unknown) => void) =>
    postEventStream(
      target,
      JSON.stringify({
        model,
        messages: call.messages,
        ...call.options,
        ...(budgetField === 'max_tokens'
          ? { max_tokens: call.maxTokens }
          : { max_completion_tokens: call.maxTokens }),
        stream: true,
        stream_options: { include_usage: true },
      }),
      signal,
      onChunk,
    );
  // A refusal arrives before any chunk, so the call can be made again with the other field.
  const send = async (
    call: WireCall,
    signal: AbortSignal,
    fail: (error: unknown) => Error,
    onChunk: (raw: unknown) => void,
  ) => {
    try {
      await request(call, signal, onChunk);
    } catch (error) {
      const failure = fail(error);
      if (budgetField !== 'max_completion_tokens' || !rejectsBudgetField(failure, budgetField)) throw failure;
      budgetField = 'max_tokens';
      await request(call, signal, onChunk);
    }
  };
  return {
    async chat({ messages, maxTokens, signal, onDelta, options }): Promise<TextGeneration> {
      const bounds = callBounds(signal, settings);
      // The call's own deadlines are told apart below (answerCut), not by the failure's mapping.
      const fail = (error: unknown) =>
        openAiFailure(error, { path, apiKey: settings.apiKey, timeoutMs: settings.timeoutMs, signal });
      const estimatedInput = messages.reduce((n, m) => n + estimateTokens(m.content), 0);
      let text = '';
      let served = model;
      let finish: string | undefined;
      let usage: ChunkUsage | undefined;
      const calls: PartialCall[] = [];
      const toolCalls = (): ToolCall[] | undefined =>
        calls.length === 0
          ? undefined
          : calls.map((c) => ({
              id: c.id,
              type: 'function',
              function: { name: c.name, arguments: c.arguments },
            }));
      const answer = (finishReason: TextGeneration['finishReason']): TextGeneration => ({
        ...(calls.length > 0 ? { toolCalls: toolCalls() } : {}),
        text,
        model: served,
        // The provider's count arrives last: without it, what arrived is estimated, within the budget.
        usage: textUsage(usage, {
          inputTokens: estimatedInput,
          outputTokens: Math.min(maxTokens, estimateTokens(text)),
        }),
        finishReason,
      });
      // A chunk without the protocol's shape throws, which closes the provider's connection.
      const take = (raw: unknown) => {
        bounds.heard();
        const chunk = textChunk(raw) ?? parseAnswer(chatChunk, raw, path);
        if (chunk.model) served = chunk.model;
        if (chunk.usage) usage = chunk.usage;
        for (const choice of chunk.choices ?? []) {
          if (choice.finish_reason) finish = choice.finish_reason;
          for (const part of choice.delta?.tool_calls ?? []) {
            const call = (calls[part.index] ??= { id: '', name: '', arguments: '' });
            if (part.id) call.id = part.id;
            if (part.function?.name) call.name += part.function.name;
            if (part.function?.arguments) call.arguments += part.function.arguments;
          }
          const piece = choice.delta?.content;
          if (piece) {
            text += piece;
            onDelta?.(piece);
          }
        }
      };
      try {
        const call = { messages: messages.map(wireMessage), maxTokens, options: wireOptions(options) };
        await send(call, bounds.combined, fail, take);
      } catch (error) {
        if (signal.aborted) return answer('cancelled');
        if (bounds.cut() === undefined) throw fail(error);
      } finally {
        bounds.end();
      }
      if (signal.aborted) return answer('cancelled');
      // A stream its deadlines cut ends as if it were complete: the bounds tell.
      const cutAtDeadline = answerCut(bounds.cut(), settings, `openai ${path}`);
      return answer(finish === 'length' || (cutAtDeadline && finish === undefined) ? 'length' : 'stop');
    },
  };
}
