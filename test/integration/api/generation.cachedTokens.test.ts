import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { type AnthropicMock, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { createTask, waitUntil } from './tasks.helpers.ts';

// Text goes to `claude` (Anthropic Messages) first and `gpt` (OpenAI-compatible) behind it; a test
// reaches `gpt` by having `claude` answer 503 first. Each part of a call has its own price, in whole
// minor units a token, so the balance says exactly which tokens were billed at which price.
let t: TestContext;
let tenant: Tenant;
let claude: AnthropicMock;
let gpt: OpenAiMock;
let server: LoopbackServer;

const perToken = (units: number) => units * 1_000_000;
const claudePrices = { input: 10, cachedInput: 1, cacheWrite: 13, output: 40 };
const gptPrices = { input: 10, cachedInput: 5, output: 20 };

// About 1,350 tokens at 4 characters a token: long enough for a cache breakpoint (1024).
const longText = Array.from({ length: 1800 }, (_, i) => `w${i % 10}`).join(' ');

beforeAll(async () => {
  [claude, gpt] = await Promise.all([startAnthropicMock(), startOpenAiMock()]);
  const env = mockProvidersEnv(
    {
      // Its 503s are how a test reaches `gpt`: they must never open its circuit.
      claude: { mock: claude, type: 'anthropic', timeoutMs: 5000, breaker: { failures: 1000 } },
      gpt: { mock: gpt, timeoutMs: 5000 },
    },
    {
      routes: { text: ['claude/claude-mock-1', 'gpt/gpt-mock'] },
      prices: {
        'claude/claude-mock-1': {
          textInputPer1MTokens: perToken(claudePrices.input),
          textCachedInputPer1MTokens: perToken(claudePrices.cachedInput),
          textCacheWritePer1MTokens: perToken(claudePrices.cacheWrite),
          textOutputPer1MTokens: perToken(claudePrices.output),
        },
        'gpt/gpt-mock': {
          textInputPer1MTokens: perToken(gptPrices.input),
          textCachedInputPer1MTokens: perToken(gptPrices.cachedInput),
          textOutputPer1MTokens: perToken(gptPrices.output),
        },
      },
    },
  );
  ({ t, tenant } = await contextWithTenant({ env, credits: 100_000_000, worker: true }));
  server = await t.listen();
});
afterAll(async () => {
  await t.close();
  await Promise.all([claude.close(), gpt.close()]);
});

let claudeSeen: number;
beforeEach(() => {
  claudeSeen = claude.requests.length;
});

const balance = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;

const meteringRow = z.object({
  usage: z.record(z.string(), z.number()),
  cost_minor: z.number(),
  model: z.string().nullable(),
});
const meteringOf = (requestId: string) =>
  t.deps.pool.one(
    sql.type(
      meteringRow,
    )`select usage, cost_minor, model from metering_records where request_id = ${requestId}`,
  );

describe('POST /text with cached input tokens', () => {
  it('OpenAI-compatible: prompt_tokens_details.cached_tokens are billed at the cached price', async () => {
    claude.queue({ kind: 'status', status: 503, type: 'overloaded_error', message: 'busy' });
    gpt.queueChat({ kind: 'ok', text: 'one two three', cachedTokens: 1536 });
    const before = await balance();
    const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'cache me' });
    expect(res.status).toBe(201);
    expect(res.body.model).toBe('gpt/gpt-mock');
    // The spec's usage has two fields: the whole prompt (cached part included) and the output.
    expect(Object.keys(res.body.usage).sort()).toEqual(['inputTokens', 'outputTokens']);
    const { inputTokens, outputTokens } = res.body.usage as { inputTokens: number; outputTokens: number };
    expect(inputTokens).toBe(2 + 1536);
    expect(outputTokens).toBe(3);
    const cost = (inputTokens - 1536) * gptPrices.input + 1536 * gptPrices.cachedInput + 3 * gptPrices.output;
    expect(res.body.cost.amount).toBe(cost);
    const after = await balance();
    expect(before.balance_minor - after.balance_minor).toBe(cost);
    expect(after.reserved_minor).toBe(0);
    const record = await meteringOf(res.headers['x-request-id']!);
    expect(record).toEqual({
      usage: { inputTokens, outputTokens, cachedInputTokens: 1536 },
      cost_minor: cost,
      model: 'gpt-mock',
    });
  });

  it('streamed: the cached count of the final usage chunk is billed, the done event keeps the spec’s usage', async () => {
    claude.queue({ kind: 'status', status: 503, type: 'overloaded_error', message: 'busy' });
    gpt.queueChat({ kind: 'ok', text: 'streamed words here', cachedTokens: 2048 });
    const sent = gpt.nextRequest('/chat/completions');
    const before = await balance();
    const res = await fetch(`${server.origin}${api('/text')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(tenant.liveKey) },
      body: JSON.stringify({ prompt: 'stream a cached answer', stream: true }),
    });
    const events = await readEvents(res);
    // The count arrives in the last chunk, which only a request with include_usage gets.
    expect((await sent).json!.stream_options).toEqual({ include_usage: true });
    const done = JSON.parse(events.at(-1)!.data) as {
      usage: Record<string, number>;
      cost: { amount: number };
    };
    expect(events.at(-1)!.event).toBe('done');
    expect(done.usage).toEqual({ inputTokens: 4 + 2048, outputTokens: 3 });
    const cost = 4 * gptPrices.input + 2048 * gptPrices.cachedInput + 3 * gptPrices.output;
    expect(done.cost.amount).toBe(cost);
    expect(before.balance_minor - (await balance()).balance_minor).toBe(cost);
    expect((await meteringOf(res.headers.get('x-request-id')!)).usage).toEqual({
      inputTokens: 4 + 2048,
      outputTokens: 3,
      cachedInputTokens: 2048,
    });
  });

  it('Anthropic: a long system prompt carries a breakpoint; reads and writes are billed at their prices', async () => {
    claude.queue({ kind: 'ok', text: 'four five', cacheRead: 1200, cacheWrite: 150 });
    const before = await balance();
    const res = await postAs(t.http, tenant.liveKey, '/text').send({
      system: longText,
      prompt: 'short question',
    });
    expect(res.status).toBe(201);
    expect(res.body.model).toBe('claude/claude-mock-1');
    const sent = claude.requests.slice(claudeSeen);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.system).toEqual([{ type: 'text', text: longText, cache_control: { type: 'ephemeral' } }]);
    // The question itself changes from call to call: it carries no breakpoint.
    expect(sent[0]!.messages).toEqual([{ role: 'user', content: 'short question' }]);

    // The mock counts words as input_tokens, the prompt's uncached part; the whole prompt adds the cache's.
    const uncached = 2;
    expect(res.body.usage).toEqual({ inputTokens: uncached + 1200 + 150, outputTokens: 2 });
    const cost =
      uncached * claudePrices.input +
      1200 * claudePrices.cachedInput +
      150 * claudePrices.cacheWrite +
      2 * claudePrices.output;
    expect(res.body.cost.amount).toBe(cost);
    expect(before.balance_minor - (await balance()).balance_minor).toBe(cost);
    expect((await meteringOf(res.headers['x-request-id']!)).usage).toEqual({
      inputTokens: uncached + 1200 + 150,
      outputTokens: 2,
      cachedInputTokens: 1200,
      cacheWriteInputTokens: 150,
    });
  });

  it('a short prompt is sent without breakpoints and billed as before', async () => {
    claude.queue({ kind: 'ok', text: 'six' });
    const before = await balance();
    const res = await postAs(t.http, tenant.liveKey, '/text').send({
      system: 'Be brief.',
      prompt: 'hi there',
    });
    expect(res.status).toBe(201);
    expect(claude.requests.at(-1)!.system).toBe('Be brief.');
    expect(JSON.stringify(claude.requests.at(-1))).not.toContain('cache_control');
    const cost = 2 * claudePrices.input + 1 * claudePrices.output;
    expect(res.body.cost.amount).toBe(cost);
    expect(before.balance_minor - (await balance()).balance_minor).toBe(cost);
    expect((await meteringOf(res.headers['x-request-id']!)).usage).toEqual({
      inputTokens: 2,
      outputTokens: 1,
    });
  });
});

const replyRecords = () =>
  t.deps.pool.any(sql.type(meteringRow)`
    select usage, cost_minor, model from metering_records
    where workspace_id = ${tenant.workspaceId} and operation = 'task.reply' order by created_at, id
  `);

/** Waits for the task's `count`-th assistant reply to be metered, and returns its record. */
async function nthReply(count: number) {
  return waitUntil(async () => {
    const records = await replyRecords();
    return records.length >= count ? records[count - 1] : undefined;
  }, 20_000);
}

describe('a task reply with cached input tokens', () => {
  it('marks the end of the earlier turns, and bills the cache reads and writes at their prices', async () => {
    const start = await balance();
    // First reply: the prefix re-sent later is the system prompt alone, too short to cache.
    claude.queue({ kind: 'ok', text: 'first answer' });
    const taskId = await createTask(t, tenant.liveKey, { input: longText });
    const first = await nthReply(1);
    const firstSent = claude.requests.at(-1)!;
    expect(JSON.stringify(firstSent)).not.toContain('cache_control');

    claude.queue({ kind: 'ok', text: 'second answer here', cacheRead: 900, cacheWrite: 500 });
    const middle = await balance();
    await postAs(t.http, tenant.liveKey, `/tasks/${taskId}/messages`).send({ input: 'and now?' }).expect(202);
    const second = await nthReply(2);
    const sent = claude.requests.at(-1)! as { messages: { role: string; content: unknown }[] };
    // The earlier turns (the long first message and its answer) end with a breakpoint; the new turn has none.
    expect(sent.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(sent.messages[1]!.content).toEqual([
      { type: 'text', text: 'first answer', cache_control: { type: 'ephemeral' } },
    ]);
    expect(typeof sent.messages[0]!.content).toBe('string');
    expect(typeof sent.messages[2]!.content).toBe('string');
    expect(JSON.stringify(sent.messages[2])).toContain('and now?');

    const { inputTokens, outputTokens } = second.usage as { inputTokens: number; outputTokens: number };
    expect(second.usage).toEqual({
      inputTokens,
      outputTokens: 3,
      cachedInputTokens: 900,
      cacheWriteInputTokens: 500,
    });
    const uncached = inputTokens - 900 - 500;
    expect(uncached).toBeGreaterThan(0);
    const cost =
      uncached * claudePrices.input +
      900 * claudePrices.cachedInput +
      500 * claudePrices.cacheWrite +
      outputTokens * claudePrices.output;
    expect(second.cost_minor).toBe(cost);
    const end = await waitUntil(async () => {
      const b = await balance();
      return b.reserved_minor === 0 ? b : undefined;
    }, 10_000);
    expect(middle.balance_minor - end.balance_minor).toBe(cost);
    expect(start.balance_minor - end.balance_minor).toBe(first.cost_minor + cost);
  });

  it('OpenAI-compatible: a reply’s cached tokens are billed at the cached price', async () => {
    claude.queue({ kind: 'status', status: 503, type: 'overloaded_error', message: 'busy' });
    gpt.queueChat({ kind: 'ok', text: 'cached reply', cachedTokens: 1024 });
    const already = (await replyRecords()).length;
    const before = await balance();
    await createTask(t, tenant.liveKey, { input: 'hello there' });
    const record = await nthReply(already + 1);
    const { inputTokens } = record.usage as { inputTokens: number };
    expect(record.usage).toEqual({ inputTokens, outputTokens: 2, cachedInputTokens: 1024 });
    const cost = (inputTokens - 1024) * gptPrices.input + 1024 * gptPrices.cachedInput + 2 * gptPrices.output;
    expect(record.cost_minor).toBe(cost);
    const end = await waitUntil(async () => {
      const b = await balance();
      return b.reserved_minor === 0 ? b : undefined;
    }, 10_000);
    expect(before.balance_minor - end.balance_minor).toBe(cost);
  });
});
