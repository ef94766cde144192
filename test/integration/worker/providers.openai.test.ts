import http from 'node:http';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../../shared/config/config.ts';
import { encodePng } from '../../../shared/providers/png.ts';
import { ProviderError } from '../../../shared/providers/types.ts';
import { openAiEntryClients } from '../../../worker/providers/openai.ts';
import { testEnv } from '../../helpers/context.ts';
import { mockReply, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { expectTimedOut } from '../../helpers/providerTimeouts.ts';
import { streamedChat } from '../../helpers/streamedChat.ts';
import { thrown } from '../../helpers/thrown.ts';

let mock: OpenAiMock;
let providers: ReturnType<typeof providersFor>;

const never = () => new AbortController().signal;

/** The `openai` provider's clients for the models PROVIDER=openai and OPENAI_* name. */
function providersFor(overrides: Record<string, string>) {
  const config = loadConfig(
    testEnv({
      PROVIDER: 'openai',
      OPENAI_BASE_URL: mock.baseUrl,
      OPENAI_API_KEY: mock.apiKey,
      ...overrides,
    }),
  );
  const o = config.provider.openai;
  const settings = { baseUrl: o.baseUrl, apiKey: o.apiKey, timeoutMs: config.provider.timeoutMs };
  return {
    chat: openAiEntryClients(settings, o.textModel).text,
    images: openAiEntryClients(settings, o.imageModel).image,
    embeddings: openAiEntryClients(settings, o.embeddingModel).embedding,
    transcription: openAiEntryClients(settings, o.transcriptionModel).transcription,
  };
}

/** A chat client of the mock under explicit deadlines. */
const chatWith = (limits: { timeoutMs: number; firstByteTimeoutMs: number }) =>
  openAiEntryClients({ baseUrl: mock.baseUrl, apiKey: mock.apiKey, ...limits }, 'gpt-mock').text;

beforeAll(async () => {
  mock = await startOpenAiMock();
  providers = providersFor({ PROVIDER_TIMEOUT_MS: '2000' });
});
afterAll(() => mock.close());

describe('openai provider: chat', () => {
  it('streams deltas and reports the usage the provider counted', async () => {
    const { out, deltas } = await streamedChat(providers.chat, 'hello there');
    expect(out.text).toBe(mockReply('hello there'));
    expect(deltas.join('')).toBe(out.text);
    expect(deltas.length).toBeGreaterThan(2);
    expect(out).toMatchObject({
      model: 'gpt-4o-mini',
      finishReason: 'stop',
      usage: { inputTokens: 2, outputTokens: 5 },
    });
    const sent = mock.requests.at(-1)!;
    expect(sent.authorization).toBe(`Bearer ${mock.apiKey}`);
    expect(sent.json).toMatchObject({
      model: 'gpt-4o-mini',
      max_completion_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(sent.json).not.toHaveProperty('max_tokens');
  });

  it('falls back to max_tokens, from then on, for a server that refuses max_completion_tokens', async () => {
    const older = providersFor({});
    mock.queueChat({
      kind: 'status',
      status: 400,
      message: 'Unrecognized request argument supplied: max_completion_tokens',
    });
    const before = mock.requests.length;
    const request = {
      messages: [{ role: 'user' as const, content: 'hello there' }],
      maxTokens: 20,
      signal: never(),
    };
    expect((await older.chat.chat(request)).text).toBe(mockReply('hello there'));
    expect((await older.chat.chat(request)).text).toBe(mockReply('hello there'));
    const sent = mock.requests.slice(before).map((r) => r.json);
    expect(sent).toHaveLength(3);
    expect(sent[0]).toMatchObject({ max_completion_tokens: 20 });
    expect(sent[1]).toMatchObject({ max_tokens: 20 });
    expect(sent[1]).not.toHaveProperty('max_completion_tokens');
    expect(sent[2]).toMatchObject({ max_tokens: 20 });
  });

  it('stops on abort and returns what was produced, estimated', async () => {
    mock.queueChat({ kind: 'hang', words: 2 });
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = providers.chat.chat({
      messages: [{ role: 'user', content: 'never ending' }],
      maxTokens: 50,
      signal: controller.signal,
      onDelta: (t) => {
        deltas.push(t);
        if (deltas.length === 2) controller.abort(new Error('cancelled'));
      },
    });
    const out = await pending;
    expect(out.finishReason).toBe('cancelled');
    expect(out.text).toBe('Mock reply ');
    expect(out.usage.outputTokens).toBeGreaterThan(0);
    await mock.requests.at(-1)!.closed;
  });

  it('maps 5xx and 429 to retryable errors, other 4xx to permanent ones', async () => {
    mock.queueChat(
      { kind: 'status', status: 503, message: 'overloaded' },
      { kind: 'status', status: 429, message: 'slow down' },
    );
    mock.queueChat({ kind: 'status', status: 400, message: 'bad request' });
    const request = { messages: [{ role: 'user' as const, content: 'x' }], maxTokens: 5, signal: never() };
    for (const retryable of [true, true, false]) {
      const error = await thrown(providers.chat.chat(request));
      expect(error).toBeInstanceOf(ProviderError);
      expect((error as ProviderError).retryable).toBe(retryable);
    }
  });

  it('times out a stuck provider as a retryable error', async () => {
    mock.queueChat({ kind: 'stall' });
    const fast = providersFor({ PROVIDER_TIMEOUT_MS: '300' });
    await expectTimedOut(
      fast.chat.chat({ messages: [{ role: 'user', content: 'x' }], maxTokens: 5, signal: never() }),
      /timed out/,
    );
  });

  it('ends an answer still flowing at the whole deadline with what arrived, as length: not a failure', async () => {
    mock.queueChat({ kind: 'slow', tokenMs: 50 });
    const arrived = mock.nextRequest('/chat/completions');
    const out = await chatWith({ timeoutMs: 600, firstByteTimeoutMs: 500 }).chat({
      messages: [{ role: 'user', content: 'a long story' }],
      maxTokens: 200,
      signal: never(),
    });
    const call = await arrived;
    await call.closed;
    expect(out.finishReason).toBe('length');
    const tokens = out.text.split(' ').length - 1;
    expect(out.text).toBe('tok '.repeat(tokens));
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThanOrEqual(call.sent!);
    expect(call.sent).toBeLessThan(200);
    // The provider's count never arrived: what arrived is estimated (4 characters a token).
    expect(out.usage.outputTokens).toBe(tokens);
  });

  it('fails a call whose first byte does not come within firstByteTimeoutMs, or that falls silent mid-answer', async () => {
    mock.queueChat({ kind: 'stall' }, { kind: 'hang', words: 2 });
    const chat = chatWith({ timeoutMs: 10_000, firstByteTimeoutMs: 300 });
    const request = { messages: [{ role: 'user' as const, content: 'x' }], maxTokens: 5, signal: never() };
    await expectTimedOut(chat.chat(request), /timed out after 300 ms without a first byte/);
    await expectTimedOut(chat.chat(request), /timed out after 300 ms of silence mid-answer/);
    await mock.requests.at(-1)!.closed;
  });

  it('never puts the provider key in an error', async () => {
    const wrongKey = 'sk-wrong-key-abcdef0123456789';
    const wrong = providersFor({ OPENAI_API_KEY: wrongKey });
    const error = (await thrown(wrong.embeddings.embed({ input: ['x'], signal: never() }))) as ProviderError;
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/401/);
    expect(error.message).not.toContain(wrongKey);
    expect(error.message).not.toContain('sk-');
    expect(JSON.stringify(error)).not.toContain(wrongKey);
  });
});

describe('openai provider: embeddings, images, transcriptions', () => {
  it('returns vectors in input order whatever order the provider answered in', async () => {
    const out = await providers.embeddings.embed({ input: ['a', 'bbb', 'cc'], signal: never() });
    expect(out.vectors).toEqual([
      [1, 0, 0.5],
      [3, 1, 0.5],
      [2, 2, 0.5],
    ]);
    expect(out.usage.inputTokens).toBe(9);
  });

  it('generates an image as base64 with the size nearest the aspect ratio', async () => {
    const out = await providers.images.generate({ prompt: 'a cat', aspectRatio: '16:9', signal: never() });
    expect(Buffer.from(out.b64, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(out).toMatchObject({
      mimeType: 'image/png',
      model: 'gpt-image-1',
      usage: { inputTokens: 7, outputTokens: 100 },
    });
    expect(mock.requests.at(-1)!.json).toMatchObject({
      model: 'gpt-image-1',
      prompt: 'a cat',
      size: '1536x1024',
      n: 1,
    });
  });

  it('uploads audio as multipart and reads the duration whisper reports', async () => {
    const audio = Buffer.alloc(3000, 1);
    const out = await providers.transcription.transcribe({
      audio,
      mimeType: 'audio/mpeg',
      filename: 'clip.mp3',
      language: 'en',
      signal: never(),
    });
    expect(out).toEqual({
      text: 'Mock transcript of 3000 bytes.',
      model: 'whisper-1',
      durationSeconds: 12.5,
    });
    const sent = mock.requests.at(-1)!;
    expect(sent.fields).toMatchObject({
      model: 'whisper-1',
      response_format: 'verbose_json',
      language: 'en',
    });
    expect(sent.file).toEqual({ filename: 'clip.mp3', mimeType: 'audio/mpeg', bytes: 3000 });
  });
});

describe('openai provider: a plain OpenAI-compatible server', () => {
  let server: http.Server;
  let baseUrl: string;
  const seen: http.IncomingHttpHeaders[] = [];
  const png = encodePng(2, 2, () => [1, 2, 3]);

  // Answers images with a URL to download (as dall-e does unless asked for base64), and takes no key.
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      if (req.url === '/v1/images/generations') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ created: 0, data: [{ url: `${baseUrl}/files/cat.png` }] }));
      } else if (req.url === '/v1/files/cat.png') {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.end(png);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends no key of the environment to a server configured without one, and downloads an image URL', async () => {
    const leaks = {
      OPENAI_API_KEY: 'sk-env-key-0123456789',
      OPENAI_ORG_ID: 'org-env',
      OPENAI_PROJECT_ID: 'proj-env',
    };
    const saved = Object.fromEntries(Object.keys(leaks).map((k) => [k, process.env[k]]));
    Object.assign(process.env, leaks);
    try {
      const { image } = openAiEntryClients({ baseUrl, apiKey: undefined, timeoutMs: 2000 }, 'local-image-1');
      const out = await image.generate({ prompt: 'a cat', aspectRatio: '1:1', signal: never() });
      expect(out).toMatchObject({
        b64: png.toString('base64'),
        mimeType: 'image/png',
        model: 'local-image-1',
      });
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    const call = seen.at(-2)!;
    expect(call).not.toHaveProperty('authorization');
    expect(call).not.toHaveProperty('openai-organization');
    expect(call).not.toHaveProperty('openai-project');
    expect(JSON.stringify(seen)).not.toContain('sk-env-key');
  });
});
