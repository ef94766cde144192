import { describe, expect, it } from '@jest/globals';

import type { ChatMessage } from '../../shared/providers/types.ts';
import {
  anthropicPrompt,
  anthropicTextUsage,
  minCacheableTokens,
  readAnthropicUsage,
} from '../../worker/providers/anthropicPrompt.ts';

// Long enough for a cache breakpoint on its own (about 4 characters a token), and short.
const long = 'x'.repeat(minCacheableTokens * 4);
const short = 'a few words';
const ephemeral = { type: 'ephemeral' };

describe('cache breakpoints', () => {
  it('marks a long system prompt and nothing else of a single call', () => {
    const prompt = anthropicPrompt([
      { role: 'system', content: long },
      { role: 'user', content: short },
    ]);
    expect(prompt.system).toEqual([{ type: 'text', text: long, cache_control: ephemeral }]);
    expect(prompt.messages).toEqual([{ role: 'user', content: short }]);
  });

  it('sends a short prompt as it was, without breakpoints', () => {
    const prompt = anthropicPrompt(
      [
        { role: 'system', content: short },
        { role: 'user', content: short },
        { role: 'assistant', content: short },
        { role: 'user', content: short },
      ],
      3,
    );
    expect(prompt).toEqual({
      system: short,
      messages: [
        { role: 'user', content: short },
        { role: 'assistant', content: short },
        { role: 'user', content: short },
      ],
    });
  });

  it('marks the last message of a long stable prefix, not the new turn after it', () => {
    const chat: ChatMessage[] = [
      { role: 'system', content: short },
      { role: 'user', content: long },
      { role: 'assistant', content: 'earlier answer' },
      { role: 'user', content: 'the new question' },
    ];
    const prompt = anthropicPrompt(chat, 3);
    expect(prompt.system).toBe(short);
    expect(prompt.messages).toEqual([
      { role: 'user', content: long },
      { role: 'assistant', content: [{ type: 'text', text: 'earlier answer', cache_control: ephemeral }] },
      { role: 'user', content: 'the new question' },
    ]);
  });

  it('marks the system block when the stable prefix is the system prompt alone', () => {
    const prompt = anthropicPrompt(
      [
        { role: 'system', content: long },
        { role: 'user', content: short },
      ],
      1,
    );
    expect(prompt.system).toEqual([{ type: 'text', text: long, cache_control: ephemeral }]);
    expect(prompt.messages).toEqual([{ role: 'user', content: short }]);
  });

  it('uses two breakpoints for a long system prompt and a long conversation', () => {
    const prompt = anthropicPrompt(
      [
        { role: 'system', content: long },
        { role: 'user', content: short },
        { role: 'assistant', content: short },
        { role: 'user', content: short },
      ],
      3,
    );
    const marked = JSON.stringify(prompt).split('cache_control').length - 1;
    expect(marked).toBe(2);
    expect(prompt.messages[1]).toEqual({
      role: 'assistant',
      content: [{ type: 'text', text: short, cache_control: ephemeral }],
    });
  });
});

describe('Anthropic usage', () => {
  it('adds the cache reads and writes to input_tokens for the whole prompt', () => {
    let counts = readAnthropicUsage(
      {},
      { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 2000, cache_creation_input_tokens: 300 },
      'message_start',
    );
    // message_start's output count is a placeholder: without message_delta the output is estimated.
    expect(anthropicTextUsage(counts, { inputTokens: 1, outputTokens: 7 })).toEqual({
      inputTokens: 2310,
      outputTokens: 7,
      cachedInputTokens: 2000,
      cacheWriteInputTokens: 300,
    });
    counts = readAnthropicUsage(
      counts,
      { output_tokens: 42, input_tokens: null, cache_read_input_tokens: null },
      'message_delta',
    );
    expect(anthropicTextUsage(counts, { inputTokens: 1, outputTokens: 7 })).toEqual({
      inputTokens: 2310,
      outputTokens: 42,
      cachedInputTokens: 2000,
      cacheWriteInputTokens: 300,
    });
  });

  it('reports no cache counts when the provider reports none', () => {
    const counts = readAnthropicUsage({}, { input_tokens: 10, output_tokens: 1 }, 'message_start');
    expect(anthropicTextUsage(counts, { inputTokens: 1, outputTokens: 3 })).toEqual({
      inputTokens: 10,
      outputTokens: 3,
    });
  });
});
