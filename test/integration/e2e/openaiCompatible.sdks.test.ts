import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ChatOpenAI } from '@langchain/openai';
import { embed, generateText, streamText } from 'ai';
import OpenAI, { toFile } from 'openai';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { makeWav } from '../../helpers/audio.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { mockImageB64, mockReply, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * The OpenAI-compatible API driven, unchanged, by the SDKs teams already use (the official `openai`
 * package, the Vercel AI SDK's openai-compatible provider, LangChain's ChatOpenAI) against the
 * Procfile's processes (an api and a worker process) with the local fake provider behind every route.
 */
let t: TestContext;
let mock: OpenAiMock;
let fleet: Fleet;
let tenant: Tenant;
let baseURL: string;

beforeAll(async () => {
  mock = await startOpenAiMock();
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 10_000_000, rateLimitPerMinute: 100_000 });
  fleet = await startFleet(
    {
      ...mockProvidersEnv(
        { fake: { mock } },
        {
          routes: {
            text: ['fake/gpt-fake'],
            embedding: ['fake/embed-fake'],
            image: ['fake/image-fake'],
            transcription: ['fake/whisper-fake'],
          },
          aliases: { text: { fast: ['fake/gpt-fast'] } },
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
  baseURL = `${fleet.webs[0]!.origin}/api/openai/v1`;
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
  await t?.close();
  await mock?.close();
});

const client = (apiKey = tenant.liveKey) => new OpenAI({ apiKey, baseURL, maxRetries: 0 });

/** The error a call rejected with, for its class and fields. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await call;
  } catch (error) {
    if (error instanceof OpenAI.APIError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

describe('the official openai package', () => {
  it('chats, with usage and our request id', async () => {
    const completion = await client().chat.completions.create({
      model: 'default',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
      max_completion_tokens: 50,
      temperature: 0.2,
    });
    expect(completion.choices[0]!.message.content).toBe(mockReply('Hello there'));
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    expect(completion.model).toBe('fake/gpt-fake');
    expect(completion.usage).toMatchObject({ completion_tokens: 5, prompt_tokens: 4, total_tokens: 9 });
    expect(completion._request_id).toMatch(/^req_/);
    const sent = mock.requests.at(-1)!.json!;
    expect(sent).toMatchObject({ model: 'gpt-fake', temperature: 0.2, max_completion_tokens: 50 });
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hello there' },
    ]);
  }, 30_000);

  it('streams chat as chunks ending in [DONE], with usage when asked', async () => {
    const stream = await client().chat.completions.create({
      model: 'default',
      messages: [{ role: 'user', content: 'Stream me please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined | null;
    let finish: string | null | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(mockReply('Stream me please'));
    expect(finish).toBe('stop');
    expect(usage).toMatchObject({
      prompt_tokens: 3,
      completion_tokens: 6,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    // The SDK's stream helper assembles the same message (it needs the role the first chunk names).
    const helper = client().chat.completions.stream({
      model: 'fast',
      messages: [{ role: 'user', content: 'Again' }],
    });
    const final = await helper.finalChatCompletion();
    expect(final.choices[0]!.message).toMatchObject({ role: 'assistant', content: mockReply('Again') });
    expect(mock.requests.at(-1)!.json!.model).toBe('gpt-fast');
  }, 30_000);

  it('passes tools through and answers the tool call', async () => {
    mock.queueChat({ kind: 'toolCall', name: 'get_weather', arguments: '{"city":"Kathmandu"}' });
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const completion = await client().chat.completions.create({
      model: 'fake/gpt-fake',
      messages: [{ role: 'user', content: 'Weather in Kathmandu?' }],
      tools,
      tool_choice: 'auto',
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.tool_calls).toEqual([
      {
        id: 'call_mock_1',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Kathmandu"}' },
      },
    ]);
    expect(mock.requests.at(-1)!.json).toMatchObject({ tools, tool_choice: 'auto' });
    // The tool's answer goes back with the conversation, as the SDK sends it.
    await client().chat.completions.create({
      model: 'default',
      messages: [
        { role: 'user', content: 'Weather in Kathmandu?' },
        { role: 'assistant', content: null, tool_calls: choice.message.tool_calls! },
        { role: 'tool', tool_call_id: 'call_mock_1', content: 'Sunny, 21 °C' },
      ],
      tools,
    });
    expect(mock.requests.at(-1)!.json!.messages).toEqual([
      { role: 'user', content: 'Weather in Kathmandu?' },
      { role: 'assistant', content: null, tool_calls: choice.message.tool_calls },
      { role: 'tool', content: 'Sunny, 21 °C', tool_call_id: 'call_mock_1' },
    ]);
  }, 30_000);

  it('creates embeddings as floats and as base64', async () => {
    const floats = await client().embeddings.create({
      model: 'default',
      input: ['one', 'three'],
      encoding_format: 'float',
    });
    expect(floats.data.map((d) => d.embedding)).toEqual([
      [3, 0, 0.5],
      [5, 1, 0.5],
    ]);
    expect(floats.usage).toEqual({ prompt_tokens: 6, total_tokens: 6 });
    // Without a format the SDK asks for base64 and decodes the float32 values itself.
    const decoded = await client().embeddings.create({ model: 'fake/embed-fake', input: 'four' });
    expect(decoded.data[0]!.embedding).toEqual([4, 0, 0.5]);
  }, 30_000);

  it('generates images as b64_json and as a URL', async () => {
    const b64 = await client().images.generate({ prompt: 'A red square', size: '1536x1024' });
    expect(b64.data![0]!.b64_json).toBe(mockImageB64);
    expect(mock.requests.at(-1)!.json).toMatchObject({ model: 'image-fake', size: '1536x1024' });
    const url = await client().images.generate({ prompt: 'A red square', response_format: 'url' });
    expect(url.data![0]!.url).toBe(`data:image/png;base64,${mockImageB64}`);
  }, 30_000);

  it('transcribes audio as json, text and verbose_json', async () => {
    const wav = makeWav(1);
    const file = () => toFile(wav, 'clip.wav', { type: 'audio/wav' });
    const json = await client().audio.transcriptions.create({ file: await file(), model: 'default' });
    expect(json.text).toBe(`Mock transcript of ${wav.length} bytes.`);
    const text = await client().audio.transcriptions.create({
      file: await file(),
      model: 'default',
      response_format: 'text',
    });
    expect(text).toBe(`Mock transcript of ${wav.length} bytes.`);
    const verbose = await client().audio.transcriptions.create({
      file: await file(),
      model: 'fake/whisper-fake',
      response_format: 'verbose_json',
      language: 'en',
    });
    expect(verbose).toMatchObject({
      text: `Mock transcript of ${wav.length} bytes.`,
      duration: 12.5,
      language: 'en',
    });
  }, 30_000);

  it('lists the models the key may use, and retrieves one', async () => {
    const ids: string[] = [];
    for await (const model of client().models.list()) ids.push(model.id);
    expect(ids).toEqual([
      'default',
      'fast',
      'fake/gpt-fake',
      'fake/gpt-fast',
      'fake/embed-fake',
      'fake/image-fake',
      'fake/whisper-fake',
    ]);
    expect(await client().models.retrieve('fake/gpt-fast')).toMatchObject({
      id: 'fake/gpt-fast',
      owned_by: 'fake',
    });
    // A key scoped to embeddings sees the models it may use only.
    const embeddingsOnly = await tenant.key({ scopeLevel: 'operation', operations: ['embeddings.create'] });
    const narrow: string[] = [];
    for await (const model of client(embeddingsOnly.secret).models.list()) narrow.push(model.id);
    expect(narrow).toEqual(['default', 'fake/embed-fake']);
  }, 30_000);

  it("raises the SDK's typed errors", async () => {
    const chat = (c: OpenAI, body: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
      c.chat.completions.create({ model: 'default', messages: [{ role: 'user', content: 'Hi' }], ...body });

    const unknown = await failure(chat(client('svc_sk_live_unknown')));
    expect(unknown).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(unknown.error).toMatchObject({ code: 'invalid_api_key', type: 'invalid_request_error' });
    expect(unknown.requestID).toMatch(/^req_/);

    const embeddingsOnly = await tenant.key({ scopeLevel: 'operation', operations: ['embeddings.create'] });
    const denied = await failure(chat(client(embeddingsOnly.secret)));
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied.code).toBe('api_key_operation_scope');

    const missing = await failure(chat(client(), { model: 'gpt-nonexistent' }));
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect(missing).toMatchObject({ code: 'model_not_found', param: 'model', type: 'invalid_request_error' });

    const bad = await failure(
      chat(client(), {
        messages: [
          { role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x.test/a.png' } }] },
        ],
      }),
    );
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ code: 'invalid_request_body', param: 'messages.0.content.0' });
    const twoChoices = await failure(chat(client(), { n: 2 }));
    expect(twoChoices).toBeInstanceOf(OpenAI.BadRequestError);
    expect(twoChoices.param).toBe('n');

    const limited = await createTenant(t.deps.pool, { credits: 1_000_000, rateLimitPerMinute: 1 });
    await chat(client(limited.testKey));
    const tooMany = await failure(chat(client(limited.testKey)));
    expect(tooMany).toBeInstanceOf(OpenAI.RateLimitError);
    expect(tooMany.code).toBe('rate_limited');
    expect(Number(tooMany.headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(tooMany.headers?.get('x-ratelimit-limit-requests')).toBe('1');
  }, 30_000);
});

describe('the Vercel AI SDK (openai-compatible provider)', () => {
  it('generates, streams and embeds', async () => {
    const provider = createOpenAICompatible({
      name: 'svc',
      baseURL,
      apiKey: tenant.liveKey,
      includeUsage: true,
    });
    const generated = await generateText({
      model: provider('default'),
      prompt: 'Vercel hello',
      maxRetries: 0,
    });
    expect(generated.text).toBe(mockReply('Vercel hello'));
    expect(generated.usage.outputTokens).toBe(5);

    const streamed = streamText({ model: provider('fast'), prompt: 'Vercel stream', maxRetries: 0 });
    let text = '';
    for await (const piece of streamed.textStream) text += piece;
    expect(text).toBe(mockReply('Vercel stream'));
    expect((await streamed.usage).outputTokens).toBe(5);

    const { embedding } = await embed({
      model: provider.embeddingModel('default'),
      value: 'seven',
      maxRetries: 0,
    });
    expect(embedding).toEqual([5, 0, 0.5]);
  }, 30_000);
});

describe("LangChain's ChatOpenAI", () => {
  it('invokes and streams', async () => {
    const model = new ChatOpenAI({
      model: 'default',
      apiKey: tenant.liveKey,
      configuration: { baseURL },
      maxRetries: 0,
    });
    const answer = await model.invoke('LangChain hello');
    expect(answer.content).toBe(mockReply('LangChain hello'));
    let text = '';
    for await (const chunk of await model.stream('LangChain stream')) text += String(chunk.content);
    expect(text).toBe(mockReply('LangChain stream'));
  }, 30_000);
});

const meteringRow = z.object({
  operation: z.string(),
  provider: z.string().nullable(),
  model: z.string().nullable(),
  cost_minor: z.number(),
  usage: z.unknown(),
  project_id: z.string(),
  key_id: z.string().nullable(),
  livemode: z.boolean(),
});

/** POST /text on the same platform, as a customer's own code calls it. */
function postText(apiKey: string, prompt: string) {
  return fetch(`${fleet.webs[0]!.origin}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, maxTokens: 100 }),
  });
}

/** The metering record and request-log row of a call, once both are written (the log is batched). */
async function records(requestId: string) {
  return waitUntil(async () => {
    const metering = await t.deps.pool.maybeOne(
      sql.type(meteringRow)`
        select operation, provider, model, cost_minor::int as cost_minor, usage, project_id, key_id, livemode
        from metering_records where request_id = ${requestId}`,
    );
    const logged = await loggedCall(t.deps.pool, requestId);
    return metering && logged ? { metering, logged } : undefined;
  }, 10_000);
}

describe('the same platform underneath', () => {
  it('leaves the same metering record and request-log fields as POST /text, but for the operation, path and status', async () => {
    const native = await postText(tenant.liveKey, 'Parity check');
    expect(native.status).toBe(201);
    const compat = await client()
      .chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content: 'Parity check' }],
        max_tokens: 100,
      })
      .withResponse();
    expect(compat.data.choices[0]!.message.content).toBe(((await native.json()) as { text: string }).text);
    const a = await records(native.headers.get('x-request-id')!);
    const b = await records(compat.request_id!);
    expect(b.metering).toEqual(a.metering);
    expect(a.metering).toMatchObject({
      operation: 'text.generate',
      provider: 'fake',
      model: 'gpt-fake',
      livemode: true,
    });
    expect(a.metering.cost_minor).toBeGreaterThan(0);
    const same = (row: typeof a.logged) => {
      const {
        request_id,
        operation,
        path,
        status,
        latency_ms,
        created_at,
        request_body,
        response_body,
        ...rest
      } = row;
      void [request_id, latency_ms, created_at, request_body, response_body];
      return { rest, varying: { operation, path, status } };
    };
    expect(same(b.logged).rest).toEqual(same(a.logged).rest);
    expect(same(a.logged).varying).toEqual({
      operation: 'text.generate',
      path: '/api/pub/v1/text',
      status: 201,
    });
    expect(same(b.logged).varying).toEqual({
      operation: 'openai.chat.completions',
      path: '/api/openai/v1/chat/completions',
      status: 200,
    });
    // The log keeps the answer as the caller got it.
    expect(b.logged.response_body).toMatchObject({ object: 'chat.completion', model: 'fake/gpt-fake' });
  }, 30_000);

  it('refuses a key without the text scope on both paths, and a spent cap stops both', async () => {
    const embeddingsOnly = await tenant.key({ scopeLevel: 'operation', operations: ['embeddings.create'] });
    const nativeDenied = await postText(embeddingsOnly.secret, 'Denied');
    expect(nativeDenied.status).toBe(403);
    expect(((await nativeDenied.json()) as { error: { code: string } }).error.code).toBe(
      'api_key_operation_scope',
    );
    const compatDenied = await failure(
      client(embeddingsOnly.secret).chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content: 'Denied' }],
      }),
    );
    expect(compatDenied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(compatDenied.code).toBe('api_key_operation_scope');

    // A cap of 1: the first call spends it; then both paths are refused before a job exists, and
    // nothing more reaches the provider.
    const capped = await tenant.key({ monthlySpendCapMinor: 1 });
    expect((await postText(capped.secret, 'Spends the cap')).status).toBe(201);
    const before = mock.requests.length;
    const nativeCapped = await postText(capped.secret, 'Capped');
    expect(nativeCapped.status).toBe(402);
    expect(((await nativeCapped.json()) as { error: { code: string } }).error.code).toBe(
      'key_spend_limit_reached',
    );
    const compatCapped = await failure(
      client(capped.secret).chat.completions.create({
        model: 'default',
        messages: [{ role: 'user', content: 'Capped' }],
      }),
    );
    expect(compatCapped).toBeInstanceOf(OpenAI.RateLimitError);
    expect(compatCapped).toMatchObject({ code: 'key_spend_limit_reached', type: 'insufficient_quota' });
    expect(compatCapped.headers?.get('x-should-retry')).toBe('false');
    expect(mock.requests.length).toBe(before);
  }, 30_000);
});
