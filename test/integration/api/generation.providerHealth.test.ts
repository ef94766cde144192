import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { type AnthropicMock, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { jobOfRequest } from '../../helpers/jobs.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithTwoTenants } from '../../helpers/tenantContext.ts';
import { createTask, waitUntil } from './tasks.helpers.ts';

// `slow` (the protocol under test) first, `backup` (OpenAI-compatible) behind it. `slow` is healthy
// but writes one token per 50 ms, so an answer of 200 tokens would take 10 s: its whole-answer
// deadline (3 s) ends it while it still flows. The deadlines leave a loaded machine room: a
// first byte later than 2 s would be counted, and the tests would fail for the machine's sake. Its circuit opens after 3 counted failures.
// Output is billed at 1 minor unit a token at `slow`, 3 at `backup`; input is free.
const timeoutMs = 3000;
const firstByteTimeoutMs = 2000;
const perToken = (units: number) => ({ textInputPer1MTokens: 0, textOutputPer1MTokens: units * 1_000_000 });

/** What both mocks can be told to do, under either protocol's queue. */
type Behavior = { kind: 'slow'; tokenMs: number } | { kind: 'stall' } | { kind: 'hang'; words: number };

const textAnswer = z.object({
  text: z.string(),
  model: z.string(),
  usage: z.object({ inputTokens: z.number(), outputTokens: z.number() }),
  cost: z.object({ amount: z.number(), currency: z.string() }),
});

describe.each(['openai', 'anthropic'] as const)('%s: health only the provider can spoil', (protocol) => {
  let t: TestContext;
  let tenant: Tenant;
  let other: Tenant;
  let slow: OpenAiMock | AnthropicMock;
  let backup: OpenAiMock;
  let server: LoopbackServer;

  beforeAll(async () => {
    [slow, backup] = await Promise.all([
      protocol === 'openai' ? startOpenAiMock() : startAnthropicMock(),
      startOpenAiMock(),
    ]);
    const env = mockProvidersEnv(
      {
        slow: {
          mock: slow,
          type: protocol,
          timeoutMs,
          firstByteTimeoutMs,
          breaker: { failures: 3, windowSeconds: 600, cooldownSeconds: 600 },
        },
        backup: { mock: backup, timeoutMs: 5000 },
      },
      {
        routes: { text: ['slow/model-slow', 'backup/gpt-backup'] },
        prices: { 'slow/model-slow': perToken(1), 'backup/gpt-backup': perToken(3) },
      },
    );
    ({ t, tenant, other } = await contextWithTwoTenants({ env, credits: 1_000_000, worker: true }));
    server = await t.listen();
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([slow?.close(), backup?.close()]);
  });

  const queue = (...behaviors: Behavior[]) =>
    'queueChat' in slow ? slow.queueChat(...behaviors) : slow.queue(...behaviors);
  const chatCalls = (mock: OpenAiMock | AnthropicMock) =>
    'queueChat' in mock
      ? mock.requests.filter((r) => r.path === '/chat/completions').length
      : mock.requests.length;

  /** Chat calls each provider received since the test began. */
  let seen: () => { slow: number; backup: number };
  beforeEach(() => {
    const at = { slow: chatCalls(slow), backup: chatCalls(backup) };
    seen = () => ({ slow: chatCalls(slow) - at.slow, backup: chatCalls(backup) - at.backup });
  });

  const balance = async (who: Tenant) =>
    (await findWorkspaceBalance(t.deps.pool, who.workspaceId))!.balance_minor;
  const metering = (requestId: string) =>
    t.deps.pool.anyFirst(
      sql.type(z.object({ cost_minor: z.number() }))`
        select cost_minor from metering_records where request_id = ${requestId}
      `,
    );
  const circuit = () =>
    t.deps.pool.maybeOne(
      sql.type(z.object({ failures: z.number(), open_until: z.string().nullable() }))`
        select failures, open_until from provider_circuits where provider = 'slow'
      `,
    );
  /** Counted failures of `slow` (no row: none ever). */
  const failures = async () => (await circuit())?.failures ?? 0;

  const postText = (who: Tenant, maxTokens: number) =>
    postAs(t.http, who.liveKey, '/text').send({ prompt: 'tell me everything', maxTokens });

  /** A 201 answer cut at the whole-answer deadline: the tokens that arrived, billed once at `slow`. */
  async function expectCutAndBilledOnce(body: unknown, requestId: string): Promise<number> {
    const answer = textAnswer.parse(body);
    const tokens = answer.text.split(' ').length - 1;
    expect(answer.model).toBe('slow/model-slow');
    expect(answer.text).toBe('tok '.repeat(tokens));
    expect(tokens).toBeGreaterThan(0);
    expect(tokens).toBeLessThan(200);
    expect(answer.usage.outputTokens).toBe(tokens);
    expect(answer.cost.amount).toBe(tokens);
    expect(await metering(requestId)).toEqual([tokens]);
    expect(await jobOfRequest(t.deps.pool, requestId)).toMatchObject({
      status: 'succeeded',
      cost_minor: tokens,
    });
    return tokens;
  }

  it('does not count answers still flowing at the whole-answer deadline, retries none, and bills what arrived once (the issue: 5 × maxTokens 200)', async () => {
    const before = await balance(tenant);
    queue(...Array.from({ length: 5 }, () => ({ kind: 'slow', tokenMs: 50 }) as const));
    const answers = await Promise.all(Array.from({ length: 5 }, () => postText(tenant, 200)));
    let billed = 0;
    for (const res of answers) {
      expect(res.status).toBe(201);
      billed += await expectCutAndBilledOnce(res.body, res.headers['x-request-id']!);
    }
    // Neither the next route entry nor the job's own retries asked anyone again.
    expect(seen()).toEqual({ slow: 5, backup: 0 });
    expect(before - (await balance(tenant))).toBe(billed);
    expect(await failures()).toBe(0);
  });

  it('ends a streamed answer cut at the whole-answer deadline with a done event, billed for what was streamed', async () => {
    const before = await balance(tenant);
    queue({ kind: 'slow', tokenMs: 50 });
    const res = await fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
      body: JSON.stringify({ prompt: 'stream it all', maxTokens: 200, stream: true }),
    });
    expect(res.status).toBe(201);
    const events = await readEvents(res);
    expect(events.at(-1)!.event).toBe('done');
    const done = JSON.parse(events.at(-1)!.data) as unknown;
    const deltas = events.filter((e) => e.event === 'delta').map((e) => JSON.parse(e.data).text as string);
    expect(deltas.join('')).toBe(textAnswer.parse(done).text);
    const tokens = await expectCutAndBilledOnce(done, res.headers.get('x-request-id')!);
    expect(seen()).toEqual({ slow: 1, backup: 0 });
    expect(before - (await balance(tenant))).toBe(tokens);
    expect(await failures()).toBe(0);
  });

  it('probe: 20 long answers from one workspace, then another workspace’s short call is answered by the same provider', async () => {
    queue(...Array.from({ length: 21 }, () => ({ kind: 'slow', tokenMs: 50 }) as const));
    const long = await Promise.all(Array.from({ length: 20 }, () => postText(tenant, 200)));
    expect(long.map((res) => res.status)).toEqual(Array.from({ length: 20 }, () => 201));
    expect(await failures()).toBe(0);
    const before = await balance(other);
    const short = await postText(other, 5).expect(201);
    expect(short.body).toMatchObject({ text: 'tok '.repeat(5), model: 'slow/model-slow' });
    expect(short.body.cost.amount).toBe(5);
    expect(before - (await balance(other))).toBe(5);
    expect(seen()).toEqual({ slow: 21, backup: 0 });
  });

  it('keeps a task reply its provider’s whole-answer deadline ended as the reply, billed once, not retried', async () => {
    queue({ kind: 'slow', tokenMs: 50 });
    const before = await balance(tenant);
    const taskId = await createTask(t, tenant.liveKey, { input: 'Write the longest reply you can.' });
    const reply = await waitUntil(async () => {
      const res = await t.http
        .get(api(`/tasks/${taskId}/messages`))
        .set(bearer(tenant.liveKey))
        .expect(200);
      const messages = res.body.data as { role: string; text: string; status?: string }[];
      return messages.find((m) => m.role === 'assistant');
    }, 20_000);
    const tokens = reply.text.split(' ').length - 1;
    expect(reply.text).toBe('tok '.repeat(tokens));
    expect(tokens).toBeGreaterThan(0);
    const charged = await waitUntil(async () => {
      const rows = await t.deps.pool.anyFirst(
        sql.type(z.object({ cost_minor: z.number() }))`
          select cost_minor from metering_records
          where workspace_id = ${tenant.workspaceId} and operation = 'task.reply'
        `,
      );
      return rows.length > 0 ? rows : undefined;
    }, 10_000);
    expect(charged).toEqual([tokens]);
    expect(before - (await balance(tenant))).toBe(tokens);
    expect(seen()).toEqual({ slow: 1, backup: 0 });
    expect(await failures()).toBe(0);
  });

  // Last in its describe: it opens `slow`'s circuit.
  it('counts a first-byte timeout and a silence mid-answer against the provider: its circuit opens', async () => {
    const answeredByBackup = async (at: number) => {
      const res = await postText(tenant, 50).expect(201);
      expect(res.body.model).toBe('backup/gpt-backup');
      expect(await metering(res.headers['x-request-id']!)).toEqual([3 * res.body.usage.outputTokens]);
      // Counted in the background: the answer may come back just before the count lands.
      await waitUntil(async () => ((await failures()) === at ? true : undefined), 5000);
    };
    queue({ kind: 'stall' }, { kind: 'hang', words: 2 }, { kind: 'stall' });
    await answeredByBackup(1);
    await answeredByBackup(2);
    await answeredByBackup(3);
    expect(seen()).toEqual({ slow: 3, backup: 3 });
    expect((await circuit())?.open_until).not.toBeNull();
    // Open: the next call goes straight to backup, `slow` is not asked at all.
    const res = await postText(other, 5).expect(201);
    expect(res.body.model).toBe('backup/gpt-backup');
    expect(seen()).toEqual({ slow: 3, backup: 4 });
  });
});
