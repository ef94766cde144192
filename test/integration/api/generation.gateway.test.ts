import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { listFilteredRequestLogs } from '../../../shared/db/queries/requestLogs.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { type AnthropicMock, anthropicReply, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { mockReply, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

// A route of three providers speaking two real protocols: `alpha` (OpenAI-compatible) first,
// `claude` (Anthropic Messages) second, `beta` (OpenAI-compatible) last. Each bills output tokens
// at its own price (1, 2 and 3 minor units a token), so the balance shows which one answered.
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;
let claude: AnthropicMock;
let server: LoopbackServer;

const perToken = (units: number) => ({ textInputPer1MTokens: 0, textOutputPer1MTokens: units * 1_000_000 });

beforeAll(async () => {
  [alpha, beta, claude] = await Promise.all([startOpenAiMock(), startOpenAiMock(), startAnthropicMock()]);
  const env = mockProvidersEnv(
    {
      // A breaker that never opens here: these tests are about one call's fallback (see generation.breaker).
      alpha: { mock: alpha, timeoutMs: 800, breaker: { failures: 1000 } },
      claude: { mock: claude, type: 'anthropic', timeoutMs: 5000 },
      beta: { mock: beta, timeoutMs: 5000 },
    },
    {
      routes: {
        text: ['alpha/gpt-alpha', 'claude/claude-mock-1', 'beta/gpt-beta'],
        image: ['alpha/img-alpha', 'beta/img-beta'],
      },
      prices: {
        'alpha/gpt-alpha': perToken(1),
        'claude/claude-mock-1': perToken(2),
        'beta/gpt-beta': perToken(3),
        'alpha/img-alpha': { imagePerImage: 10 },
        'beta/img-beta': { imagePerImage: 30 },
      },
    },
  );
  ({ t, tenant } = await contextWithTenant({
    env,
    credits: 1_000_000,
    worker: true,
  }));
  server = await t.listen();
});
afterAll(async () => {
  await t.close();
  await Promise.all([alpha.close(), beta.close(), claude.close()]);
});

/** Requests each provider received since the test began. */
let seen: () => { alpha: number; claude: number; beta: number };
beforeEach(() => {
  const at = { alpha: alpha.requests.length, claude: claude.requests.length, beta: beta.requests.length };
  seen = () => ({
    alpha: alpha.requests.length - at.alpha,
    claude: claude.requests.length - at.claude,
    beta: beta.requests.length - at.beta,
  });
});

const balance = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;

const jobRow = z.object({ status: z.string(), cost_minor: z.number().nullable() });
const meteringRow = z.object({
  provider: z.string().nullable(),
  model: z.string().nullable(),
  cost_minor: z.number(),
});
const meteringOf = (requestId: string) =>
  t.deps.pool.any(
    sql.type(
      meteringRow,
    )`select provider, model, cost_minor from metering_records where request_id = ${requestId}`,
  );
const jobOf = (requestId: string) =>
  t.deps.pool.one(sql.type(jobRow)`select status, cost_minor from jobs where request_id = ${requestId}`);

/** The model the request log recorded in the call's response. */
const loggedModel = async (requestId: string) => {
  const call = await loggedCall(t.deps.pool, requestId);
  return (call!.response_body as { model: string }).model;
};

async function postText(prompt: string) {
  const before = await balance();
  const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt });
  return { res, spent: before - (await balance()), job: await jobOf(res.headers['x-request-id']!) };
}

describe('fallback inside one job attempt', () => {
  it.each([
    ['answers 503', { kind: 'status', status: 503, message: 'overloaded' }],
    ['times out', { kind: 'stall' }],
    ['drops the connection', { kind: 'drop' }],
    [
      'streams an error before any delta',
      { kind: 'streamError', words: 0, error: { message: 'upstream down' } },
    ],
  ] as const)('when the first provider %s, the second answers, billed at its price', async (_name, fault) => {
    alpha.queueChat(fault);
    const { res, spent, job } = await postText('route me');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ text: anthropicReply('route me'), model: 'claude/claude-mock-1' });
    expect(seen()).toEqual({ alpha: 1, claude: 1, beta: 0 });
    // One job attempt: a retry would have asked `alpha` again.
    expect(job).toEqual({ status: 'succeeded', cost_minor: 2 * res.body.usage.outputTokens });
    expect(res.body.cost.amount).toBe(2 * res.body.usage.outputTokens);
    expect(spent).toBe(res.body.cost.amount);
    expect(await meteringOf(res.headers['x-request-id']!)).toEqual([
      { provider: 'claude', model: 'claude-mock-1', cost_minor: res.body.cost.amount },
    ]);
    await t.deps.requestLog.flush();
    expect(await loggedModel(res.headers['x-request-id']!)).toBe('claude/claude-mock-1');
  });

  it('goes down the whole route: the last provider answers when the first two fail', async () => {
    alpha.queueChat({ kind: 'status', status: 500, message: 'broken' });
    claude.queue({ kind: 'status', status: 529, type: 'overloaded_error', message: 'Overloaded' });
    const { res, spent } = await postText('third time');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ text: mockReply('third time'), model: 'beta/gpt-beta' });
    expect(seen()).toEqual({ alpha: 1, claude: 1, beta: 1 });
    expect(spent).toBe(3 * res.body.usage.outputTokens);
  });

  it('does not send a request the first provider refused (400) anywhere else, and charges nothing', async () => {
    alpha.queueChat({ kind: 'status', status: 400, message: 'context length exceeded' });
    const { res, spent, job } = await postText('too long');
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('internal_error');
    expect(seen()).toEqual({ alpha: 1, claude: 0, beta: 0 });
    expect({ spent, status: job.status }).toEqual({ spent: 0, status: 'failed' });
  });

  it('does not send an Anthropic refusal streamed as an error event anywhere else', async () => {
    alpha.queueChat({ kind: 'status', status: 502, message: 'bad gateway' });
    claude.queue({ kind: 'streamError', words: 0, type: 'invalid_request_error', message: 'bad turn order' });
    const { res } = await postText('refused');
    expect(res.status).toBe(500);
    expect(seen()).toEqual({ alpha: 1, claude: 1, beta: 0 });
  });

  it('falls back for a streamed call whose first provider failed before its first delta', async () => {
    alpha.queueChat({ kind: 'streamError', words: 0, error: { message: 'upstream down' } });
    const res = await fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
      body: JSON.stringify({ prompt: 'stream me', stream: true }),
    });
    const events = await readEvents(res);
    const deltas = events
      .filter((e) => e.event === 'delta')
      .map((e) => (JSON.parse(e.data) as { text: string }).text);
    expect(deltas.join('')).toBe(anthropicReply('stream me'));
    expect(seen()).toEqual({ alpha: 1, claude: 1, beta: 0 });
  });

  it('does not continue elsewhere a stream that has sent a delta, and bills what it produced', async () => {
    alpha.queueChat({ kind: 'streamError', words: 2, error: { message: 'upstream died mid-answer' } });
    const before = await balance();
    const res = await fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
      body: JSON.stringify({ prompt: 'half an answer', stream: true }),
    });
    const requestId = res.headers.get('x-request-id')!;
    const events = await readEvents(res);
    const deltas = events
      .filter((e) => e.event === 'delta')
      .map((e) => (JSON.parse(e.data) as { text: string }).text);
    expect(deltas.join('')).toBe('Mock reply ');
    // The stream ends as a cut-off call does: with the error event, the text so far being all there is.
    expect(events.at(-1)!.event).toBe('error');
    // Neither other provider was asked (the text would have been stitched from two models), and the
    // job was not retried (it would have streamed the answer again after the part already sent).
    expect(seen()).toEqual({ alpha: 1, claude: 0, beta: 0 });
    const [record] = await meteringOf(requestId);
    // Billed at alpha's price (prompt free, 1 an output token) for the two words it produced.
    expect(record).toEqual({ provider: 'alpha', model: 'gpt-alpha', cost_minor: expect.any(Number) });
    expect(record!.cost_minor).toBeGreaterThanOrEqual(1);
    expect(record!.cost_minor).toBeLessThanOrEqual(4);
    expect(before - (await balance())).toBe(record!.cost_minor);
    expect((await jobOf(requestId)).status).toBe('cancelled');
  });

  it('bills an Anthropic stream cut after a delta at its price, and logs the call at that cost', async () => {
    alpha.queueChat({ kind: 'status', status: 503, message: 'overloaded' });
    claude.queue({ kind: 'streamError', words: 2, type: 'overloaded_error', message: 'Overloaded' });
    const res = await fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
      body: JSON.stringify({ prompt: 'half from claude', stream: true }),
    });
    const requestId = res.headers.get('x-request-id')!;
    const events = await readEvents(res);
    expect([events[0]!.event, events.at(-1)!.event]).toEqual(['delta', 'error']);
    expect(seen()).toEqual({ alpha: 1, claude: 1, beta: 0 });
    const [record] = await meteringOf(requestId);
    expect(record).toEqual({ provider: 'claude', model: 'claude-mock-1', cost_minor: expect.any(Number) });
    expect(record!.cost_minor).toBeGreaterThanOrEqual(2);
    await t.deps.requestLog.flush();
    const logged = await listFilteredRequestLogs(
      t.deps.pool,
      tenant.workspaceId,
      {},
      { limit: 20, retentionDays: 30 },
    );
    expect(logged.find((r) => r.request_id === requestId)?.cost_minor).toBe(record!.cost_minor);
  });

  it("leaves test keys on their fixtures: no provider is asked, whatever the route's state", async () => {
    alpha.queueChat({ kind: 'status', status: 503, message: 'down' });
    const res = await postAs(t.http, tenant.testKey, '/text').send({ prompt: 'fixture' }).expect(201);
    expect(res.body.cost.amount).toBe(0);
    expect(res.body.model).not.toContain('/');
    expect(seen()).toEqual({ alpha: 0, claude: 0, beta: 0 });
    // The queued 503 is still there for the next live call: alpha answers it, claude takes over.
    const live = await postText('after the fixture');
    expect(live.res.body.model).toBe('claude/claude-mock-1');
  });

  it('routes images too, billed at the image price of the provider that answered', async () => {
    alpha.failNext('/images/generations', 503, 'busy');
    const before = await balance();
    const res = await postAs(t.http, tenant.liveKey, '/images').send({ prompt: 'a cat' }).expect(201);
    expect(res.body.model).toBe('beta/img-beta');
    expect(before - (await balance())).toBe(30);
  });
});
