import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { makeWav } from '../../helpers/audio.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { adminQuery } from '../../helpers/database.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { jobOfRequest } from '../../helpers/jobs.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { mockImageB64, mockReply, type OpenAiMock } from '../../helpers/openaiMock.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({
    env: {
      PROVIDER_TIMEOUT_MS: '1500',
      // One minor unit per output token: what a reply costs is then visible in the balance.
      PRICES: JSON.stringify({ textInputPer1MTokens: 0, textOutputPer1MTokens: 1_000_000 }),
    },
    credits: 1_000_000,
    worker: true,
  }));
  server = await t.listen();
});
afterAll(() => t.close());

const balance = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;

const jobOf = (requestId: string) => jobOfRequest(t.deps.pool, requestId);

function meteringFor(requestId: string) {
  return t.deps.pool.any(sql.type(
    z.object({ cost_minor: z.number(), usage: z.record(z.string(), z.number()) }),
  )`
    select cost_minor, usage from metering_records where request_id = ${requestId}
  `);
}

async function waitForStatus(requestId: string, status: string) {
  for (let i = 0; i < 100; i++) {
    const job = await jobOf(requestId);
    if (job.status === status) return job;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job of ${requestId} never reached ${status}`);
}

/** POST /text with `stream: true` over real HTTP as the live key, so the SSE body can be read as it comes. */
const streamText = (prompt: string, signal?: AbortSignal) =>
  fetch(`${server.origin}${api('/text')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
    body: JSON.stringify({ prompt, stream: true }),
    signal,
  });

describe('live keys on the openai provider', () => {
  it('POST /text: the provider reply, its usage, and the cost of its tokens', async () => {
    const before = await balance();
    const res = await postAs(t.http, tenant.liveKey, '/text')
      .send({ prompt: 'Hello there', system: 'Be kind.' })
      .expect(201);
    expect(res.body).toEqual({
      text: mockReply('Hello there'),
      model: 'gpt-4o-mini',
      usage: { inputTokens: 4, outputTokens: 5 },
      cost: { amount: 5, currency: 'USD' },
    });
    const sent = mock.requests.at(-1)!.json!;
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Be kind.' },
      { role: 'user', content: 'Hello there' },
    ]);
    expect(sent.max_completion_tokens).toBe(4096);
    expect((await balance()).balance_minor).toBe(before.balance_minor - 5);
    expect((await balance()).reserved_minor).toBe(0);
  });

  it('POST /text streaming relays the provider deltas', async () => {
    mock.queueChat({ kind: 'ok', text: 'one two three four five six', delayMs: 20 });
    const res = await streamText('count');
    expect(res.status).toBe(201);
    const events = await readEvents(res);
    const deltas = events.filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data).text as string);
    const done = JSON.parse(events.at(-1)!.data);
    expect(events.at(-1)!.event).toBe('done');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join('')).toBe('one two three four five six');
    expect(done).toEqual({
      text: 'one two three four five six',
      model: 'gpt-4o-mini',
      usage: { inputTokens: 1, outputTokens: 6 },
      cost: { amount: 6, currency: 'USD' },
    });
  });

  it('POST /text: provider text PostgreSQL refuses (NUL, a lone surrogate) arrives with U+FFFD in its place', async () => {
    mock.queueChat({ kind: 'ok', text: 'nul\u0000 and lone\uD800 end' });
    const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'odd' }).expect(201);
    expect(res.body.text).toBe('nul\uFFFD and lone\uFFFD end');
    mock.queueChat({ kind: 'ok', text: 'streamed\u0000 too' });
    const streamed = await streamText('odd');
    const events = await readEvents(streamed);
    expect(events.at(-1)!.event).toBe('done');
    expect(JSON.parse(events.at(-1)!.data).text).toBe('streamed\uFFFD too');
  });

  it('POST /text streaming survives losing its LISTEN connection: deltas still add up and done arrives', async () => {
    const words = Array.from({ length: 12 }, (_, i) => `word${i}`).join(' ');
    mock.queueChat({ kind: 'ok', text: words, delayMs: 60 });
    const res = await streamText('keep going');
    let killed = false;
    const events = await readEvents(res, (event) => {
      if (event.event === 'delta' && !killed) {
        killed = true;
        // NOTIFYs sent while the hub reconnects are lost for good.
        void adminQuery('select pg_terminate_backend($1)', [t.deps.hub.backendPid]);
      }
    });
    expect(killed).toBe(true);
    const done = events.at(-1)!;
    expect(done.event).toBe('done');
    expect(JSON.parse(done.data)).toMatchObject({ text: words, model: 'gpt-4o-mini' });
    const deltas = events.filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data).text as string);
    expect(deltas.join('')).toBe(words);
  });

  it('POST /images, /embeddings and /transcriptions answer from the provider', async () => {
    const image = await postAs(t.http, tenant.liveKey, '/images')
      .send({ prompt: 'a lighthouse', aspectRatio: '9:16' })
      .expect(201);
    // The provider's bytes, relayed unchanged.
    expect(image.body).toEqual({
      image: { b64: mockImageB64, mimeType: 'image/png' },
      model: 'gpt-image-1',
      usage: { inputTokens: 7, outputTokens: 100 },
      cost: { amount: 4, currency: 'USD' },
    });
    expect(mock.requests.at(-1)!.json).toMatchObject({ size: '1024x1536' });

    const emb = await postAs(t.http, tenant.liveKey, '/embeddings')
      .send({ input: ['a', 'bbb'] })
      .expect(201);
    expect(emb.body).toEqual({
      embeddings: [
        [1, 0, 0.5],
        [3, 1, 0.5],
      ],
      model: 'text-embedding-3-small',
      usage: { inputTokens: 6 },
      cost: { amount: 1, currency: 'USD' },
    });

    const audio = makeWav(2);
    const tr = await postAs(t.http, tenant.liveKey, '/transcriptions')
      .attach('audio', audio, { filename: 'memo.wav', contentType: 'audio/wav' })
      .expect(201);
    expect(tr.body).toEqual({
      text: `Mock transcript of ${audio.length} bytes.`,
      model: 'whisper-1',
      cost: { amount: 1, currency: 'USD' },
    });
    expect(await meteringFor(tr.headers['x-request-id']!)).toEqual([
      { cost_minor: 1, usage: { audioSeconds: 12.5 } },
    ]);
  });

  it('retries a provider failure that may pass (503, then a timeout) and bills once', async () => {
    mock.failNext('/embeddings', 503, 'overloaded');
    mock.queueChat({ kind: 'stall' });
    // Two calls on two endpoints of the mock: their retries wait out graphile-worker's backoff side by side.
    const [res, slow] = await Promise.all([
      postAs(t.http, tenant.liveKey, '/embeddings')
        .send({ input: ['retry me'] })
        .expect(201),
      postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'are you there' }).expect(201),
    ]);
    expect(res.body.embeddings).toEqual([[8, 0, 0.5]]);
    expect(await meteringFor(res.headers['x-request-id']!)).toHaveLength(1);

    expect(slow.body.text).toBe(mockReply('are you there'));
    expect(await meteringFor(slow.headers['x-request-id']!)).toHaveLength(1);
  });

  it('answers internal_error for a provider refusal, releases the hold and leaks nothing', async () => {
    const before = await balance();
    mock.failNext('/images/generations', 401, `Incorrect API key provided: ${mock.apiKey}`);
    const res = await postAs(t.http, tenant.liveKey, '/images').send({ prompt: 'x' }).expect(500);
    expect(res.body.error).toMatchObject({ code: 'internal_error', message: expect.stringMatching(/retry/) });
    const raw = JSON.stringify(res.body);
    expect(raw).not.toContain(mock.apiKey);
    expect(raw).not.toMatch(/sk-|Incorrect API key|401/);
    const job = await jobOf(res.headers['x-request-id']!);
    expect(job.status).toBe('failed');
    expect(JSON.stringify(job.error)).not.toContain('sk-');
    expect(await balance()).toEqual(before);
    expect(await meteringFor(res.headers['x-request-id']!)).toEqual([]);
  });
});

describe('errors streamed mid-answer', () => {
  it('retries one that may pass (here without a status) and bills the answer that completed, once', async () => {
    const before = await balance();
    mock.queueChat({ kind: 'streamError', words: 2, error: { message: 'upstream overloaded' } });
    const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'again' }).expect(201);
    expect(res.body.text).toBe(mockReply('again'));
    const charged = (await meteringFor(res.headers['x-request-id']!)).map((m) => m.cost_minor);
    expect(charged).toEqual([res.body.cost.amount]);
    expect((await balance()).balance_minor).toBe(before.balance_minor - res.body.cost.amount);
  });

  it('fails one that will not pass (a 4xx) with internal_error, closes the provider call and charges nothing', async () => {
    const before = await balance();
    mock.queueChat({
      kind: 'streamError',
      words: 2,
      error: { message: `content filtered for ${mock.apiKey}`, code: 400 },
    });
    const arrived = mock.nextRequest('/chat/completions');
    const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'nope' }).expect(500);
    expect(res.body.error).toMatchObject({ code: 'internal_error', message: expect.stringMatching(/retry/) });
    await (
      await arrived
    ).closed;
    const job = await jobOf(res.headers['x-request-id']!);
    expect(job.status).toBe('failed');
    expect(JSON.stringify(job.error)).not.toContain(mock.apiKey);
    expect(await balance()).toEqual(before);
    expect(await meteringFor(res.headers['x-request-id']!)).toEqual([]);
  });
});

describe('streaming failures', () => {
  it('ends a stream whose generation failed with an error event carrying the envelope', async () => {
    const before = await balance();
    mock.queueChat({ kind: 'status', status: 400, message: 'context length exceeded' });
    const res = await streamText('too long');
    expect(res.status).toBe(201);
    const events = await readEvents(res);
    expect(events.map((e) => e.event)).toEqual(['error']);
    expect(JSON.parse(events[0]!.data)).toEqual({
      error: {
        code: 'internal_error',
        message: expect.stringMatching(/retry/),
        requestId: res.headers.get('x-request-id'),
      },
    });
    expect(await balance()).toEqual(before);
  });
});

describe('cancellation', () => {
  it('a streaming client that disconnects stops the generation and pays only for the tokens produced', async () => {
    mock.queueChat({ kind: 'hang', words: 3 });
    const before = await balance();
    const controller = new AbortController();
    const res = await streamText('tell me a very long story about the sea', controller.signal);
    const requestId = res.headers.get('x-request-id')!;
    let received = '';
    await readEvents(res, (event) => {
      if (event.event === 'delta') received += JSON.parse(event.data).text;
      return received === 'Mock reply to: ';
    });
    const providerCall = mock.requests.at(-1)!;
    controller.abort();
    // The worker hears the cancellation and drops the provider call.
    await providerCall.closed;
    const job = await waitForStatus(requestId, 'cancelled');
    // "Mock reply to: " is 15 characters: 4 tokens by the estimate used when the provider cannot report usage.
    expect(job.cost_minor).toBe(4);
    expect(await meteringFor(requestId)).toEqual([
      { cost_minor: 4, usage: { inputTokens: 10, outputTokens: 4 } },
    ]);
    const after = await balance();
    expect(after.balance_minor).toBe(before.balance_minor - 4);
    expect(after.reserved_minor).toBe(0);
  });

  it('a non-streaming client that disconnects cancels its job too', async () => {
    mock.queueChat({ kind: 'hang', words: 1 });
    const controller = new AbortController();
    const arrived = mock.nextRequest('/chat/completions');
    const pending = fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...bearer(tenant.liveKey),
        'x-request-id': 'req_disconnect_plain',
      },
      body: JSON.stringify({ prompt: 'wait for me' }),
      signal: controller.signal,
    }).catch((error: unknown) => error);
    const providerCall = await arrived;
    controller.abort();
    expect(await pending).toMatchObject({ name: 'AbortError' });
    await providerCall.closed;
    const job = await waitForStatus('req_disconnect_plain', 'cancelled');
    expect(job.cost_minor).toBe(2);
  });
});
