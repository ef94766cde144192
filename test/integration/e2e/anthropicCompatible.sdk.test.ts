import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { estimateTokens } from '../../../shared/providers/tokens.ts';
import { type AnthropicMock, anthropicReply, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { mockReply, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { parseResponse, sendPartially } from '../../helpers/rawHttp.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * The Anthropic-compatible API driven, unchanged, by the official `@anthropic-ai/sdk` against the
 * Procfile's processes (an api and a worker process): the text route's `default` is a fake
 * Anthropic provider, and the alias `gpt` a fake OpenAI-compatible one, so both protocols answer
 * behind the same Messages API.
 */
let t: TestContext;
let claude: AnthropicMock;
let gpt: OpenAiMock;
let fleet: Fleet;
let tenant: Tenant;
let baseURL: string;

beforeAll(async () => {
  [claude, gpt] = await Promise.all([startAnthropicMock(), startOpenAiMock()]);
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 10_000_000, rateLimitPerMinute: 100_000 });
  fleet = await startFleet(
    {
      ...mockProvidersEnv(
        { claude: { mock: claude, type: 'anthropic' }, fake: { mock: gpt } },
        {
          routes: { text: ['claude/claude-mock-1'] },
          aliases: { text: { gpt: ['fake/gpt-fake'] } },
          prices: { 'claude/claude-mock-1': { textInputPer1MTokens: 0, textOutputPer1MTokens: 1_000_000 } },
        },
      ),
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      DATABASE_POOL_SIZE: '5',
      WORKER_CONCURRENCY: '4',
    },
    { webs: 1, workers: 1 },
  );
  baseURL = `${fleet.webs[0]!.origin}/api/anthropic`;
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
  await t?.close();
  await Promise.all([claude?.close(), gpt?.close()]);
});

const client = (apiKey = tenant.liveKey) => new Anthropic({ apiKey, baseURL, maxRetries: 0 });

/** The error a call rejected with, for its class and fields. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof Anthropic.APIError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

type Params = Anthropic.MessageCreateParamsNonStreaming;

const hello = (model = 'default'): Params => ({
  model,
  max_tokens: 50,
  messages: [{ role: 'user', content: 'Hi' }],
});

const meteringRow = z.object({
  provider: z.string().nullable(),
  model: z.string().nullable(),
  cost_minor: z.number(),
});

describe('messages', () => {
  it('answers through the Anthropic provider, options passed on, metered and logged as its own operation', async () => {
    claude.queue({ kind: 'ok', cacheRead: 3, cacheWrite: 2 });
    const { data: message, response } = await client()
      .messages.create({
        model: 'default',
        max_tokens: 64,
        system: [{ type: 'text', text: 'Be brief.' }],
        messages: [
          { role: 'user', content: 'Hello there' },
          { role: 'assistant', content: 'Hi!' },
          {
            role: 'user',
            content: [{ type: 'text', text: 'How are you', cache_control: { type: 'ephemeral' } }],
          },
        ],
        stop_sequences: ['\n\nHuman:'],
        metadata: { user_id: 'user-7' },
      })
      .withResponse();
    expect(message).toMatchObject({
      type: 'message',
      role: 'assistant',
      model: 'claude/claude-mock-1',
      content: [{ type: 'text', text: anthropicReply('How are you') }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      // The mock counts the turns' words (6) as the uncached part, beside its cache reads and writes.
      usage: {
        input_tokens: 6,
        output_tokens: 7,
        cache_read_input_tokens: 3,
        cache_creation_input_tokens: 2,
      },
    });
    expect(message.id).toMatch(/^msg_/);
    const requestId = response.headers.get('request-id')!;
    expect(requestId).toMatch(/^req_/);
    expect(response.headers.get('x-request-id')).toBe(requestId);
    expect(claude.requests.at(-1)).toEqual({
      model: 'claude-mock-1',
      max_tokens: 64,
      stream: true,
      system: 'Be brief.',
      messages: [
        { role: 'user', content: 'Hello there' },
        { role: 'assistant', content: 'Hi!' },
        { role: 'user', content: 'How are you' },
      ],
      stop_sequences: ['\n\nHuman:'],
      metadata: { user_id: 'user-7' },
    });
    // Billed at the answering provider's price (1 a token out), logged under its own operation id.
    const records = await t.deps.pool.any(
      sql.type(
        meteringRow,
      )`select provider, model, cost_minor from metering_records where request_id = ${requestId}`,
    );
    expect(records).toEqual([{ provider: 'claude', model: 'claude-mock-1', cost_minor: 7 }]);
    const logged = await waitUntil(async () => (await loggedCall(t.deps.pool, requestId)) ?? undefined);
    expect(logged).toMatchObject({
      operation: 'anthropic.messages',
      path: '/api/anthropic/v1/messages',
      status: 200,
    });
  }, 30_000);

  it('answers through an OpenAI-compatible provider behind an alias, sampling as the API version allows', async () => {
    const message = await client().messages.create({
      model: 'gpt',
      max_tokens: 20,
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hello there' }] }],
      stop_sequences: ['END'],
    });
    expect(message).toMatchObject({
      model: 'fake/gpt-fake',
      content: [{ type: 'text', text: mockReply('Hello there') }],
      stop_reason: 'end_turn',
      usage: {
        input_tokens: 4,
        output_tokens: 5,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    });
    expect(gpt.requests.at(-1)!.json).toMatchObject({
      model: 'gpt-fake',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
      stop: ['END'],
    });
    // An older SDK (API version 2023-06-01) may still sample, on a route that takes it.
    const sampling = { temperature: 0.3, top_p: 0.9 };
    const older = { headers: { 'anthropic-version': '2023-06-01' } };
    await client().messages.create({ ...hello('gpt'), ...sampling } as Params, older);
    expect(gpt.requests.at(-1)!.json).toMatchObject(sampling);
    // Refused, not dropped: top_k (no provider takes it), sampling through Anthropic (the platform
    // calls it at 2026-10-21), and any sampling from a caller of 2026-10-21, as Anthropic answers.
    const topK = await failure(client().messages.create({ ...hello('gpt'), top_k: 5 } as Params, older));
    expect(topK).toBeInstanceOf(Anthropic.BadRequestError);
    expect(topK.message).toContain('top_k');
    const viaClaude = await failure(client().messages.create({ ...hello(), ...sampling } as Params, older));
    expect(viaClaude.message).toContain('temperature');
    const modern = await failure(client().messages.create({ ...hello('gpt'), temperature: 1 } as Params));
    expect(modern).toBeInstanceOf(Anthropic.BadRequestError);
    expect(modern.message).toContain('temperature: is not part of API version 2026-10-21');
    expect(gpt.requests.at(-1)!.json).toMatchObject(sampling);
  }, 30_000);

  it('says which stop sequence ended the answer, where the provider says it', async () => {
    claude.queue({ kind: 'ok', text: 'One two', stopSequence: 'three' });
    const message = await client().messages.create({ ...hello(), stop_sequences: ['three', 'four'] });
    expect(message).toMatchObject({
      content: [{ type: 'text', text: 'One two' }],
      stop_reason: 'stop_sequence',
      stop_sequence: 'three',
    });
    expect(claude.requests.at(-1)).toMatchObject({ stop_sequences: ['three', 'four'] });
    // An answer that reaches its budget ends at max_tokens.
    claude.queue({ kind: 'slow', tokenMs: 1 });
    const capped = await client().messages.create({ ...hello(), max_tokens: 2 });
    expect(capped).toMatchObject({
      content: [{ type: 'text', text: 'tok tok ' }],
      stop_reason: 'max_tokens',
    });
  }, 30_000);

  it('takes a call sent again with its Idempotency-Key as the first one, without a second generation', async () => {
    const options = { headers: { 'Idempotency-Key': `anth-${Date.now()}` } };
    await client().messages.create(hello(), options);
    const before = claude.requests.length;
    // Generation keeps nothing: the retry learns its output went to the first call.
    const again = await failure(client().messages.create(hello(), options));
    expect(again.status).toBe(410);
    expect(again.error).toMatchObject({ error: { code: 'idempotent_output_discarded' } });
    expect(claude.requests.length).toBe(before);
  }, 30_000);
});

describe('streamed messages', () => {
  it("streams Anthropic's event sequence, assembled by the SDK's stream helper", async () => {
    const stream = client().messages.stream({
      model: 'default',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Stream me please' }],
    });
    let text = '';
    stream.on('text', (piece) => (text += piece));
    const final = await stream.finalMessage();
    expect(text).toBe(anthropicReply('Stream me please'));
    expect(final).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: anthropicReply('Stream me please') }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      // message_delta's whole usage replaces message_start's estimate.
      usage: {
        input_tokens: 3,
        output_tokens: 7,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
    });
    expect(final.id).toMatch(/^msg_/);
  }, 30_000);

  it('sends the events in their order over the wire', async () => {
    const res = await fetch(`${baseURL}/v1/messages`, {
      method: 'POST',
      headers: {
        'x-api-key': tenant.liveKey,
        'anthropic-version': '2023-06-01',
        'content-type': 'application/json',
      },
      body: JSON.stringify({ ...hello('gpt'), stream: true }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    expect(res.headers.get('request-id')).toMatch(/^req_/);
    const events = (await res.text())
      .split('\n\n')
      .filter((frame) => frame.startsWith('event: '))
      .map((frame) => {
        const [name, data] = frame.split('\n');
        const body = JSON.parse(data!.slice('data: '.length)) as { type: string };
        expect(body.type).toBe(name!.slice('event: '.length));
        return body;
      });
    const names = events.map((e) => e.type);
    const deltas = names.filter((n) => n === 'content_block_delta').length;
    expect(deltas).toBeGreaterThanOrEqual(1);
    expect(names).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      ...Array<string>(deltas).fill('content_block_delta'),
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events.at(-2)).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: {
        input_tokens: 1,
        output_tokens: 4,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      },
    });
  }, 30_000);

  it('ends a stream whose provider fails mid-answer with an error event the SDK raises', async () => {
    claude.queue({ kind: 'streamError', words: 2, type: 'invalid_request_error', message: 'refused midway' });
    const stream = client().messages.stream({
      model: 'claude/claude-mock-1',
      max_tokens: 64,
      messages: [{ role: 'user', content: 'Break please' }],
    });
    const error = await failure(stream.finalMessage());
    expect(error.error).toMatchObject({
      type: 'error',
      error: { type: 'api_error', code: 'internal_error' },
    });
  }, 30_000);
});

describe('count_tokens', () => {
  it("counts a prompt's tokens as the platform estimates them, without a model call", async () => {
    const before = claude.requests.length;
    const counted = await client().messages.countTokens({
      model: 'default',
      system: 'Be brief.',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Count these words for me' }] }],
    });
    expect(counted.input_tokens).toBe(
      estimateTokens('Be brief.') + estimateTokens('Count these words for me'),
    );
    expect(claude.requests.length).toBe(before);
    const missing = await failure(
      client().messages.countTokens({ model: 'nope', messages: [{ role: 'user', content: 'Hi' }] }),
    );
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
  }, 30_000);
});

describe("the SDK's typed errors", () => {
  it('raises authentication, permission, not found, bad request, rate limit and billing errors', async () => {
    const unknown = await failure(client('svc_sk_live_unknown').messages.create(hello()));
    expect(unknown).toBeInstanceOf(Anthropic.AuthenticationError);
    expect(unknown.error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error', code: 'invalid_api_key' },
    });
    expect(unknown.requestID).toMatch(/^req_/);

    const embeddingsOnly = await tenant.key({ scopeLevel: 'operation', operations: ['embeddings.create'] });
    const denied = await failure(client(embeddingsOnly.secret).messages.create(hello()));
    expect(denied).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(denied.error).toMatchObject({
      error: { type: 'permission_error', code: 'api_key_operation_scope' },
    });

    const missing = await failure(client().messages.create(hello('claude-nonexistent')));
    expect(missing).toBeInstanceOf(Anthropic.NotFoundError);
    expect(missing.error).toMatchObject({ error: { type: 'not_found_error', code: 'model_not_found' } });

    const image = await failure(
      client().messages.create({
        ...hello(),
        messages: [
          {
            role: 'user',
            content: [{ type: 'image', source: { type: 'url', url: 'https://example.test/a.png' } }],
          },
        ],
      }),
    );
    expect(image).toBeInstanceOf(Anthropic.BadRequestError);
    expect(image.error).toMatchObject({
      error: { type: 'invalid_request_error', code: 'invalid_request_body' },
    });
    expect(image.message).toContain('messages.0.content.0');
    const noBudget = await failure(
      client().messages.create({
        ...hello(),
        max_tokens: undefined,
      } as unknown as Anthropic.MessageCreateParamsNonStreaming),
    );
    expect(noBudget).toBeInstanceOf(Anthropic.BadRequestError);
    expect(noBudget.message).toContain('max_tokens');
    const tools = await failure(
      client().messages.create({ ...hello(), tools: [{ name: 'f', input_schema: { type: 'object' } }] }),
    );
    expect(tools).toBeInstanceOf(Anthropic.BadRequestError);

    // Over the body limit by its Content-Length: answered before any of it is read.
    const body = Buffer.from(
      JSON.stringify({ ...hello(), messages: [{ role: 'user', content: 'x'.repeat(5_000_000) }] }),
    );
    const upload = sendPartially(fleet.webs[0]!.origin, {
      path: '/api/anthropic/v1/messages',
      headers: { 'x-api-key': tenant.liveKey, 'content-type': 'application/json' },
      body,
      sendBytes: 0,
    });
    await upload.sent;
    const huge = parseResponse(await upload.closed)!;
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });

    const limited = await createTenant(t.deps.pool, { credits: 1_000_000, rateLimitPerMinute: 1 });
    await client(limited.testKey).messages.create(hello());
    const tooMany = await failure(client(limited.testKey).messages.create(hello()));
    expect(tooMany).toBeInstanceOf(Anthropic.RateLimitError);
    expect(tooMany.error).toMatchObject({ error: { type: 'rate_limit_error', code: 'rate_limited' } });
    expect(Number(tooMany.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const unpaid = await failure(client(broke.liveKey).messages.create(hello()));
    expect(unpaid.status).toBe(402);
    expect(unpaid.error).toMatchObject({ error: { type: 'billing_error', code: 'insufficient_credits' } });
    expect(unpaid.headers?.get('x-should-retry')).toBe('false');
  }, 30_000);
});
