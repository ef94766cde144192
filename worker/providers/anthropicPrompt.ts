import type { MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';

import type { TextUsage } from '../../shared/config/prices.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import type { ChatMessage } from '../../shared/providers/types.ts';

/**
 * The shortest prefix worth a cache breakpoint, in estimated tokens. Anthropic caches nothing
 * shorter than 1024 tokens (Sonnet, Opus; more for some models) and ignores a breakpoint there,
 * so a shorter prompt goes without one.
 */
export const minCacheableTokens = 1024;

// Anthropic's only cache type: kept for five minutes after its last use.
const ephemeral = { type: 'ephemeral' } as const;

export type AnthropicPrompt = { system?: string | TextBlockParam[]; messages: MessageParam[] };

const tokensOf = (messages: ChatMessage[]) => messages.reduce((n, m) => n + estimateTokens(m.content), 0);

/**
 * A chat as the Messages API takes it, with `cache_control` breakpoints where a later call will send
 * the same prefix again: after a long system prompt, and after the last message of the stable prefix
 * (`stablePrefix` leading messages: a task's earlier turns, re-sent on every reply). The next reply
 * then reads that prefix from the cache and writes the one a turn longer (Anthropic looks back from a
 * breakpoint for the longest prefix it holds). At most two of the four breakpoints the API allows.
 */
export function anthropicPrompt(messages: ChatMessage[], stablePrefix = 0): AnthropicPrompt {
  const systemText = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content)
    .join('\n\n');
  const prefix = messages.slice(0, Math.max(0, Math.min(stablePrefix, messages.length)));
  const prefixTurns = prefix.filter((m) => m.role !== 'system').length;
  const prefixIsLong = tokensOf(prefix) >= minCacheableTokens;
  // A prefix of the system prompt alone is marked on the system block.
  const markSystem = estimateTokens(systemText) >= minCacheableTokens || (prefixIsLong && prefixTurns === 0);
  const markTurn = prefixIsLong && prefixTurns > 0 ? prefixTurns - 1 : -1;
  const turns = messages
    .filter((m) => m.role !== 'system')
    .map(({ role, content }, index): MessageParam => ({
      role: role as 'user' | 'assistant',
      content: index === markTurn ? [{ type: 'text', text: content, cache_control: ephemeral }] : content,
    }));
  if (systemText === '') return { messages: turns };
  return {
    system: markSystem ? [{ type: 'text', text: systemText, cache_control: ephemeral }] : systemText,
    messages: turns,
  };
}

/** A count from an Anthropic usage object: a whole number, or nothing when absent or unreadable. */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** The usage counts a stream has reported so far (message_start, then message_delta's cumulative ones). */
export type AnthropicCounts = { input?: number; cacheRead?: number; cacheWrite?: number; output?: number };

/**
 * Lays an event's usage over the counts so far: fields it leaves out (or null) keep their value.
 * message_start's output count is a placeholder, not what the answer produced: only message_delta's is read.
 */
export function readAnthropicUsage(
  counts: AnthropicCounts,
  usage: unknown,
  event: 'message_start' | 'message_delta',
): AnthropicCounts {
  const u = (usage ?? {}) as Record<string, unknown>;
  return {
    input: count(u.input_tokens) ?? counts.input,
    cacheRead: count(u.cache_read_input_tokens) ?? counts.cacheRead,
    cacheWrite: count(u.cache_creation_input_tokens) ?? counts.cacheWrite,
    output: (event === 'message_delta' ? count(u.output_tokens) : undefined) ?? counts.output,
  };
}

/**
 * The generation's usage: Anthropic's input_tokens are only the prompt's uncached part, so the whole
 * prompt is their sum with the cache reads and writes (as OpenAI's prompt_tokens already is).
 */
export function anthropicTextUsage(counts: AnthropicCounts, estimated: TextUsage): TextUsage {
  const cacheRead = counts.cacheRead ?? 0;
  const cacheWrite = counts.cacheWrite ?? 0;
  const input = counts.input === undefined ? estimated.inputTokens : counts.input + cacheRead + cacheWrite;
  return {
    inputTokens: input,
    outputTokens: counts.output ?? estimated.outputTokens,
    ...(cacheRead > 0 ? { cachedInputTokens: cacheRead } : {}),
    ...(cacheWrite > 0 ? { cacheWriteInputTokens: cacheWrite } : {}),
  };
}
