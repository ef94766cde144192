import { describe, expect, it } from '@jest/globals';

import { streamedError } from '../../worker/providers/openaiHttp.ts';

describe('errors streamed by an OpenAI-compatible provider', () => {
  it('leaves ordinary chunks alone', () => {
    expect(
      streamedError({ choices: [{ delta: { content: 'hi' } }] }, '/chat/completions', 'k'),
    ).toBeUndefined();
    expect(streamedError({ error: null }, '/chat/completions', 'k')).toBeUndefined();
  });

  it('retries what may pass: no status, a 5xx or 429; not a 4xx', () => {
    const classify = (error: unknown) => {
      const e = streamedError({ error }, '/chat/completions', undefined)!;
      return { retryable: e.retryable, status: e.status };
    };
    expect(classify({ message: 'upstream overloaded' })).toEqual({ retryable: true, status: undefined });
    expect(classify({ message: 'bad gateway', code: 502 })).toEqual({ retryable: true, status: 502 });
    expect(classify({ message: 'slow down', code: '429' })).toEqual({ retryable: true, status: 429 });
    expect(classify({ message: 'filtered', code: 400 })).toEqual({ retryable: false, status: 400 });
    expect(classify({ message: 'odd', code: 'server_error' })).toEqual({
      retryable: true,
      status: undefined,
    });
    expect(classify('plain text error')).toEqual({ retryable: true, status: undefined });
  });

  it('names the path and masks secrets in its message', () => {
    const e = streamedError(
      { error: { message: 'bad key sk-abcdef123456 and mykey' } },
      '/chat/completions',
      'mykey',
    )!;
    expect(e.message).toBe('openai /chat/completions streamed an error: bad key [redacted] and [redacted]');
  });
});
