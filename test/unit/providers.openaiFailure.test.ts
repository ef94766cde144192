import { describe, expect, it } from '@jest/globals';
import { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import { Stream } from 'openai/core/streaming';

import { ProviderError } from '../../shared/providers/types.ts';
import { openAiFailure } from '../../worker/providers/openaiFailure.ts';
import { ProviderAborted } from '../../worker/providers/providerErrors.ts';

const context = { path: '/chat/completions', apiKey: 'proxy-token', timeoutMs: 1500 };

/** What the SDK makes of an event stream's `data:` payloads: the chunks it yields, the error it raises. */
async function readStream(events: unknown[]): Promise<{ chunks: unknown[]; error: unknown }> {
  const body = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('');
  const response = new Response(body, { headers: { 'content-type': 'text/event-stream' } });
  const chunks: unknown[] = [];
  try {
    for await (const chunk of Stream.fromSSEResponse(response, new AbortController())) chunks.push(chunk);
  } catch (error) {
    return { chunks, error };
  }
  return { chunks, error: undefined };
}

/** The failure an error event carrying `error` becomes, read through the SDK as the chat client reads it. */
async function streamedFailure(error: unknown, apiKey: string | undefined = context.apiKey): Promise<ProviderError> {
  const raised = (await readStream([{ choices: [{ delta: { content: 'a' } }] }, { error }])).error;
  expect(raised).toBeInstanceOf(APIError);
  return openAiFailure(raised, { ...context, apiKey }) as ProviderError;
}

describe('errors streamed by an OpenAI-compatible provider', () => {
  it('leaves ordinary chunks alone', async () => {
    const read = await readStream([{ choices: [{ delta: { content: 'hi' } }] }, { error: null }]);
    expect(read.error).toBeUndefined();
    expect(read.chunks).toHaveLength(2);
  });

  it('retries what may pass: no status, a 5xx or 429; not a 4xx', async () => {
    const classify = async (error: unknown) => {
      const e = await streamedFailure(error, undefined);
      return { retryable: e.retryable, status: e.status };
    };
    expect(await classify({ message: 'upstream overloaded' })).toEqual({
      retryable: true,
      status: undefined,
    });
    expect(await classify({ message: 'bad gateway', code: 502 })).toEqual({ retryable: true, status: 502 });
    expect(await classify({ message: 'slow down', code: '429' })).toEqual({ retryable: true, status: 429 });
    expect(await classify({ message: 'filtered', code: 400 })).toEqual({ retryable: false, status: 400 });
    expect(await classify({ message: 'odd', code: 'server_error' })).toEqual({
      retryable: true,
      status: undefined,
    });
    expect(await classify('plain text error')).toEqual({ retryable: true, status: undefined });
  });

  it('names the path and masks secrets in its message', async () => {
    const e = await streamedFailure({ message: 'bad key sk-abcdef123456 and mykey' }, 'mykey');
    expect(e.message).toBe('openai /chat/completions streamed an error: bad key [redacted] and [redacted]');
  });
});

describe('other SDK failures of an OpenAI-compatible provider', () => {
  const statusError = (status: number, retryAfter?: string) =>
    APIError.generate(
      status,
      { error: { message: `failed with sk-abcdef123456` } },
      undefined,
      new Headers(retryAfter ? { 'retry-after': retryAfter } : {}),
    );

  it('maps statuses like the gateway: 408/409/425/429/5xx retryable with Retry-After, other 4xx not', () => {
    const limited = openAiFailure(statusError(429, '2'), context) as ProviderError;
    expect(limited).toMatchObject({ retryable: true, status: 429, retryAfterMs: 2000 });
    expect(limited.message).toBe('openai /chat/completions answered 429: failed with [redacted]');
    expect(openAiFailure(statusError(503), context)).toMatchObject({ retryable: true, status: 503 });
    expect(openAiFailure(statusError(400), context)).toMatchObject({ retryable: false, status: 400 });
    expect(openAiFailure(statusError(401), context)).toMatchObject({ retryable: false, status: 401 });
  });

  it('takes timeouts, connection failures and unreadable answers as passing', () => {
    const timedOut = openAiFailure(new APIConnectionTimeoutError(), context);
    expect(timedOut).toMatchObject({
      retryable: true,
      message: 'openai /chat/completions timed out after 1500 ms',
    });
    const reset = Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } });
    const dropped = openAiFailure(new APIConnectionError({ cause: reset }), context);
    expect(dropped).toMatchObject({
      retryable: true,
      message: 'openai /chat/completions request failed (ECONNRESET)',
    });
    expect(openAiFailure(new SyntaxError('bad'), context)).toMatchObject({ retryable: true });
    expect(openAiFailure(new TypeError('terminated'), context)).toBeInstanceOf(ProviderError);
  });

  it("tells the job's cancellation from the call's deadline", () => {
    const cancelled = openAiFailure(new APIUserAbortError(), {
      ...context,
      signal: AbortSignal.abort('cancelled'),
      deadline: new AbortController().signal,
    });
    expect(cancelled).toBeInstanceOf(ProviderAborted);
    const late = openAiFailure(new APIUserAbortError(), {
      ...context,
      signal: new AbortController().signal,
      deadline: AbortSignal.abort(),
    });
    expect(late).toMatchObject({
      retryable: true,
      message: 'openai /chat/completions timed out after 1500 ms',
    });
  });
});
