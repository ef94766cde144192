import { describe, expect, it } from '@jest/globals';

import { anthropicError } from '../../api/compat/anthropic/errors.ts';
import { type MessagesBody, messagesJobInput } from '../../api/compat/anthropic/messageRequest.ts';
import { loadConfig } from '../../shared/config/config.ts';
import { modelRoute } from '../../shared/config/modelRoutes.ts';
import { AppError } from '../../shared/errors/appError.ts';

const providers = loadConfig({
  DATABASE_URL: 'postgres://u:p@localhost:5432/db',
  CLAUDE_KEY: 'sk-ant-unit',
  PROVIDERS: JSON.stringify({
    providers: {
      claude: { type: 'anthropic', apiKeyEnv: 'CLAUDE_KEY' },
      gpt: { type: 'openai', baseUrl: 'http://127.0.0.1:9/v1' },
    },
    routes: { text: ['claude/claude-x', 'gpt/gpt-x'] },
    aliases: { text: { gpt: ['gpt/gpt-x'] } },
  }),
}).providers;
const route = (model: string) => modelRoute(providers, 'text', model)!;

const body = (extra: Partial<MessagesBody> = {}): MessagesBody => ({
  model: 'gpt',
  max_tokens: 100_000,
  messages: [
    { role: 'user', content: 'Hello' },
    { role: 'assistant', content: [{ type: 'text', text: 'Hi' }] },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'One' },
        { type: 'text', text: 'Two' },
      ],
    },
  ],
  ...extra,
});

/** The issues of the refusal `run` throws. */
function issuesOf(run: () => unknown) {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { code: error.code, issues: error.issues };
    throw error;
  }
  throw new Error('nothing was refused');
}

describe('a Messages request as a text job', () => {
  it('keeps the conversation, system first, the budget capped, the options under the platform names', () => {
    const input = messagesJobInput(
      body({
        system: [{ type: 'text', text: 'Be brief.' }],
        stop_sequences: ['END'],
        metadata: { user_id: 'u1' },
      }),
      route('gpt'),
      providers,
      undefined,
    );
    expect(input).toEqual({
      prompt: 'One\nTwo',
      maxTokens: 32_768,
      stream: false,
      route: 'gpt',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello' },
        { role: 'assistant', content: 'Hi' },
        { role: 'user', content: 'One\nTwo' },
      ],
      options: { stop: ['END'], user: 'u1' },
    });
  });

  it('takes sampling only before API version 2026-10-21 and on a route without Anthropic; never top_k', () => {
    const sampled = messagesJobInput(
      body({ temperature: 0.2, top_p: 0.5 }),
      route('gpt'),
      providers,
      '2023-06-01',
    );
    expect(sampled.options).toEqual({ temperature: 0.2, topP: 0.5 });
    expect(
      issuesOf(() => messagesJobInput(body({ temperature: 0.2 }), route('gpt'), providers, '2026-10-21')),
    ).toEqual({
      code: 'invalid_request_body',
      issues: [{ path: 'temperature', message: 'is not part of API version 2026-10-21' }],
    });
    expect(
      issuesOf(() => messagesJobInput(body({ top_p: 0.2 }), route('default'), providers, undefined)).issues,
    ).toEqual([{ path: 'top_p', message: "the route of model 'default' has a provider without it" }]);
    expect(
      issuesOf(() => messagesJobInput(body({ top_k: 3 }), route('gpt'), providers, undefined)).issues,
    ).toEqual([{ path: 'top_k', message: 'is not supported' }]);
  });

  it('refuses what it cannot serve, naming each field and block', () => {
    const refused = issuesOf(() =>
      messagesJobInput(
        body({
          messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'image' }] }],
          system: [{ type: 'document' }],
          tools: [{ name: 'f' }],
          tool_choice: { type: 'auto' },
          thinking: { type: 'enabled' },
          stop_sequences: ['1', '2', '3', '4', '5'],
        }),
        route('default'),
        providers,
        undefined,
      ),
    );
    expect(refused.issues!.map((i) => i.path)).toEqual([
      'tools',
      'tool_choice',
      'thinking',
      'system.0',
      'messages.0.content.1',
    ]);
    // Checked once the prompt is accepted: more stop sequences than OpenAI's protocol takes.
    expect(
      issuesOf(() =>
        messagesJobInput(
          body({ stop_sequences: ['1', '2', '3', '4', '5'] }),
          route('default'),
          providers,
          undefined,
        ),
      ).issues,
    ).toEqual([
      { path: 'stop_sequences', message: "the route of model 'default' takes at most 4 stop sequences" },
    ]);
    expect(
      messagesJobInput(body({ thinking: { type: 'disabled' } }), route('gpt'), providers, undefined).route,
    ).toBe('gpt');
  });
});

describe("errors in Anthropic's shape", () => {
  it.each([
    ['invalid_api_key', 401, 'authentication_error'],
    ['api_key_operation_scope', 403, 'permission_error'],
    ['model_not_found', 404, 'not_found_error'],
    ['invalid_request_body', 400, 'invalid_request_error'],
    ['idempotency_key_reused', 409, 'invalid_request_error'],
    ['file_too_large', 413, 'request_too_large'],
    ['rate_limited', 429, 'rate_limit_error'],
    ['insufficient_credits', 402, 'billing_error'],
    ['internal_error', 500, 'api_error'],
    ['service_unavailable', 529, 'overloaded_error'],
  ] as const)('answers %s with %i %s', (code, status, type) => {
    const shaped = anthropicError(new AppError(code, 'Why.', { headers: { 'Retry-After': '7' } }), 'req_1');
    expect(shaped.status).toBe(status);
    expect(shaped.body).toEqual({
      type: 'error',
      error: { type, message: 'Why.', code },
      request_id: 'req_1',
    });
    expect(shaped.headers['Retry-After']).toBe('7');
    expect(shaped.headers['x-should-retry']).toBe(type === 'billing_error' ? 'false' : undefined);
  });

  it('names the offending fields in the message', () => {
    const error = new AppError('invalid_request_body', 'Cannot.', {
      issues: [{ path: 'messages.0.content.1', message: 'only text blocks are accepted' }],
    });
    expect(anthropicError(error, 'req_2').body).toMatchObject({
      error: { message: 'Cannot. (messages.0.content.1: only text blocks are accepted)' },
    });
  });
});
