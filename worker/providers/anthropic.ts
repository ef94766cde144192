import Anthropic, { APIConnectionError, APIConnectionTimeoutError, APIError } from '@anthropic-ai/sdk';

import { toStorableText } from '../../shared/primitives/storableText.ts';
import { estimateTokens } from '../../shared/providers/tokens.ts';
import {
  type ChatOptions,
  type ChatProvider,
  isRetryableStatus,
  ProviderError,
  retryAfterMs,
  type TextGeneration,
} from '../../shared/providers/types.ts';
import {
  type AnthropicCounts,
  anthropicPrompt,
  anthropicTextUsage,
  readAnthropicUsage,
} from './anthropicPrompt.ts';
import { answerCut, callBounds } from './callBounds.ts';
import type { ProviderSettings } from './clientTypes.ts';
import { scrubSecrets } from './providerErrors.ts';

/**
 * What of a compatible API's options the Messages API takes: temperature (Anthropic's range is 0–1,
 * OpenAI's 0–2, so it is clamped), top_p and stop sequences. Tools and response formats never reach
 * here (the api refuses them on a route with an Anthropic entry).
 */
// Error types an Anthropic stream reports in an `error` event: the request itself is wrong, so no
// provider will take it. Any other (overloaded_error, api_error, rate_limit_error) may pass later.
const refusals = new Set([
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'not_found_error',
  'request_too_large',
  'billing_error',
]);

/** An SDK failure as the gateway understands it: retryable or not, with the provider's Retry-After. */
export function anthropicFailure(error: unknown, apiKey: string | undefined): ProviderError {
  const text = (what: string) => scrubSecrets(`anthropic /v1/messages ${what}`.slice(0, 400), apiKey);
  if (error instanceof APIConnectionTimeoutError) {
    return new ProviderError(text('timed out'), true, { cause: error });
  }
  if (error instanceof APIConnectionError) {
    return new ProviderError(text('request failed'), true, { cause: error });
  }
  if (error instanceof APIError) {
    if (typeof error.status === 'number') {
      return new ProviderError(
        text(`answered ${error.status}: ${error.message}`),
        isRetryableStatus(error.status),
        {
          status: error.status,
          retryAfterMs: retryAfterMs(error.headers?.get('retry-after') ?? null),
        },
      );
    }
    // Sent as an event inside a stream that began with 200.
    const type = (error.error as { error?: { type?: unknown } } | undefined)?.error?.type;
    return new ProviderError(text(`streamed an error: ${error.message}`), !refusals.has(String(type)));
  }
  return new ProviderError(text('answered something unreadable'), true, { cause: error });
}

/**
 * The options a compatible API's caller set that the Messages API takes: stop sequences and the
 * end user's id. The SDK speaks API version 2026-10-21, which has no sampling parameters
 * (temperature, top_p, top_k answer 400): the compatible APIs refuse those on routes through here.
 */
function wireOptions(options: ChatOptions | undefined): Record<string, unknown> {
  const named: Record<string, unknown> = {
    stop_sequences: options?.stop,
    metadata: options?.user === undefined ? undefined : { user_id: options.user },
  };
  return Object.fromEntries(Object.entries(named).filter(([, value]) => value !== undefined));
}

/**
 * Text from the Anthropic Messages API through its official SDK, always streamed: deltas reach
 * `onDelta` as they arrive, usage comes from the message's own counts, and a cancellation still
 * knows what was produced. The SDK's own retries are off: the gateway decides where a failed call goes.
 */
export function anthropicChat(settings: ProviderSettings, model: string): ChatProvider {
  const client = new Anthropic({
    apiKey: settings.apiKey ?? null,
    baseURL: settings.baseUrl,
    timeout: settings.timeoutMs,
    maxRetries: 0,
    // Failures reach the worker's log as ProviderErrors; the SDK would print to the console (ANTHROPIC_LOG).
    logLevel: 'off',
  });
  return {
    async chat({ messages, maxTokens, signal, onDelta, stablePrefix, options }): Promise<TextGeneration> {
      const bounds = callBounds(signal, settings);
      const prompt = anthropicPrompt(messages, stablePrefix);
      let text = '';
      let served = model;
      let counts: AnthropicCounts = {};
      let stop: string | null = null;
      let stopSequence: string | null = null;
      const generation = (finishReason: TextGeneration['finishReason']): TextGeneration => ({
        text,
        model: served,
        // The provider's count arrives last: without it, what arrived is estimated, within the budget.
        usage: anthropicTextUsage(counts, {
          inputTokens: messages.reduce((n, m) => n + estimateTokens(m.content), 0),
          outputTokens: Math.min(maxTokens, estimateTokens(text)),
        }),
        finishReason,
        ...(stopSequence === null ? {} : { stopSequence: toStorableText(stopSequence) }),
      });
      try {
        const stream = await client.messages.create(
          { model, max_tokens: maxTokens, stream: true, ...prompt, ...wireOptions(options) },
          { signal: bounds.combined },
        );
        for await (const event of stream) {
          bounds.heard();
          if (event.type === 'message_start') {
            served = toStorableText(event.message.model);
            counts = readAnthropicUsage(counts, event.message.usage, event.type);
          } else if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') {
            const piece = toStorableText(event.delta.text);
            text += piece;
            onDelta?.(piece);
          } else if (event.type === 'message_delta') {
            counts = readAnthropicUsage(counts, event.usage, event.type);
            stop = event.delta.stop_reason;
            stopSequence = event.delta.stop_sequence ?? null;
          }
        }
      } catch (error) {
        if (signal.aborted) return generation('cancelled');
        if (bounds.cut() === undefined) throw anthropicFailure(error, settings.apiKey);
      } finally {
        bounds.end();
      }
      if (signal.aborted) return generation('cancelled');
      // A stream its deadlines cut may end quietly inside the SDK, as if it were complete: the bounds tell.
      const cutAtDeadline = answerCut(bounds.cut(), settings, 'anthropic /v1/messages');
      return generation(stop === 'max_tokens' || (cutAtDeadline && stop === null) ? 'length' : 'stop');
    },
  };
}
