import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { anthropicChat } from '../../../worker/providers/anthropic.ts';
import { type AnthropicMock, anthropicReply, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { expectTimedOut } from '../../helpers/providerTimeouts.ts';
import { streamedChat } from '../../helpers/streamedChat.ts';

let mock: AnthropicMock;
beforeAll(async () => {
  mock = await startAnthropicMock();
});
afterAll(() => mock.close());

const never = () => new AbortController().signal;
const chatWith = (timeoutMs: number, firstByteTimeoutMs?: number) =>
  anthropicChat(
    { baseUrl: mock.baseUrl, apiKey: mock.apiKey, timeoutMs, firstByteTimeoutMs },
    'claude-mock-1',
  );
const ask = (content: string, signal = never(), timeoutMs = 5000) =>
  chatWith(timeoutMs).chat({ messages: [{ role: 'user', content }], maxTokens: 50, signal });

describe('anthropic provider', () => {
  it('streams the reply with the model served and the usage the stream reports', async () => {
    const { out, deltas } = await streamedChat(chatWith(5000), 'hello there');
    expect(out.text).toBe(anthropicReply('hello there'));
    expect(deltas.join('')).toBe(out.text);
    expect(out).toMatchObject({ model: 'claude-mock-1', finishReason: 'stop' });
    expect(out.usage).toEqual({ inputTokens: 2, outputTokens: deltas.length });
  });

  it('times out a provider that never answers, as a retryable error', async () => {
    mock.queue({ kind: 'stall' });
    await expectTimedOut(ask('stuck', never(), 300), /timed out after 300 ms/);
  });

  it('fails an answer that falls silent mid-answer for firstByteTimeoutMs: it is not taken as complete', async () => {
    mock.queue({ kind: 'hang', words: 2 });
    const chat = chatWith(10_000, 300).chat({
      messages: [{ role: 'user', content: 'stalls midway' }],
      maxTokens: 50,
      signal: never(),
    });
    await expectTimedOut(chat, /timed out after 300 ms of silence mid-answer/);
  });

  it('fails a call without a first byte within firstByteTimeoutMs, well before its whole deadline', async () => {
    mock.queue({ kind: 'stall' });
    const chat = chatWith(10_000, 300).chat({
      messages: [{ role: 'user', content: 'stuck' }],
      maxTokens: 50,
      signal: never(),
    });
    await expectTimedOut(chat, /timed out after 300 ms without a first byte/);
  });

  it('ends an answer still flowing at the whole deadline with what arrived, as length: not a failure', async () => {
    mock.queue({ kind: 'slow', tokenMs: 50 });
    const out = await chatWith(600, 500).chat({
      messages: [{ role: 'user', content: 'a long story' }],
      maxTokens: 200,
      signal: never(),
    });
    expect(out.finishReason).toBe('length');
    const tokens = out.text.split(' ').length - 1;
    expect(out.text).toBe('tok '.repeat(tokens));
    expect(tokens).toBeGreaterThan(0);
    expect(mock.sent.at(-1)).toBeLessThan(200);
    // The provider's count never arrived: what arrived is estimated (4 characters a token).
    expect(out.usage).toEqual({ inputTokens: 1, outputTokens: tokens });
  });

  it('ends a cancelled call with what it produced, billed as cancelled', async () => {
    mock.queue({ kind: 'hang', words: 2 });
    const controller = new AbortController();
    const chat = chatWith(5000).chat({
      messages: [{ role: 'user', content: 'cancel me' }],
      maxTokens: 50,
      signal: controller.signal,
      onDelta: () => {
        controller.abort(new Error('job cancelled'));
      },
    });
    const out = await chat;
    expect(out.finishReason).toBe('cancelled');
    expect(anthropicReply('cancel me').startsWith(out.text)).toBe(true);
    expect(out.text.length).toBeGreaterThan(0);
  });
});
