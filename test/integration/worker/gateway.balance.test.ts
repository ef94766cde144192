import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../../shared/config/config.ts';
import { makePool } from '../../../shared/db/pool.ts';
import type { DatabasePool } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { CircuitBreaker } from '../../../shared/providers/circuitBreaker.ts';
import type { TextGeneration } from '../../../shared/providers/types.ts';
import { makeLiveProviders } from '../../../worker/providers/live.ts';
import { type AnthropicMock, startAnthropicMock } from '../../helpers/anthropicMock.ts';
import { testEnv } from '../../helpers/context.ts';
import { createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

// The worker's live providers in this process, over real HTTP to local OpenAI-compatible fakes, with
// circuits in a real PostgreSQL: a balanced group is the gateway's own code, so it is driven directly
// (a thousand calls in seconds) rather than through the api and the queue.
let database: { name: string; url: string };
let pool: DatabasePool;
const mocks: (OpenAiMock | AnthropicMock)[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  pool = await makePool(database.url, { maxPoolSize: 4, name: 'balance-test' });
});
afterAll(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  await pool.end();
  await dropTestDatabase(database.name);
});

async function fakes(n: number): Promise<OpenAiMock[]> {
  const started = await Promise.all(Array.from({ length: n }, () => startOpenAiMock()));
  mocks.push(...started);
  return started;
}

/**
 * The live providers of a PROVIDERS document over `providers` (each a fake; an Anthropic one speaks
 * the Messages API), text routed as `text`.
 */
function gateway(providers: Record<string, OpenAiMock | AnthropicMock>, text: unknown[]) {
  const env = mockProvidersEnv(
    // Circuits are named by provider in the shared table: each test names its own providers.
    Object.fromEntries(
      Object.entries(providers).map(([name, mock]) => [
        name,
        { mock, timeoutMs: 5000, type: 'queue' in mock ? ('anthropic' as const) : ('openai' as const) },
      ]),
    ),
    { routes: { text } },
  );
  const config = loadConfig(testEnv({ ...env, DATABASE_URL: database.url }));
  const live = makeLiveProviders(config, { pool, logger: createLogger('silent', 'test') });
  return {
    chat: (content = 'hello', onDelta?: (text: string) => void): Promise<TextGeneration> =>
      live.chat.chat({
        messages: [{ role: 'user', content }],
        maxTokens: 20,
        signal: new AbortController().signal,
        ...(onDelta && { onDelta }),
      }),
  };
}

const chatCalls = (mock: OpenAiMock) => mock.requests.filter((r) => r.path === '/chat/completions').length;
const by = (answer: TextGeneration) => answer.answeredBy?.provider;

describe('balancing inside a route', () => {
  it('weighted: 1,000 calls land on the members in proportion to their weights (within ±5 %)', async () => {
    const [east, west] = await fakes(2);
    const { chat } = gateway({ w_east: east!, w_west: west! }, [
      {
        strategy: 'weighted',
        members: [
          { entry: 'w_east/gpt-4o', weight: 3 },
          { entry: 'w_west/gpt-4o', weight: 1 },
        ],
      },
    ]);
    const answered = { w_east: 0, w_west: 0 } as Record<string, number>;
    let next = 0;
    // Eight calls at a time, as a busy worker process sends them.
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < 1000) {
          next += 1;
          const answer = await chat();
          answered[by(answer)!]! += 1;
        }
      }),
    );
    expect(answered['w_east']! + answered['w_west']!).toBe(1000);
    expect(Math.abs(answered['w_east']! - 750)).toBeLessThanOrEqual(750 * 0.05);
    expect(Math.abs(answered['w_west']! - 250)).toBeLessThanOrEqual(250 * 0.05);
    // Each member's fake saw exactly the calls it answered: nothing was retried or sent twice.
    expect([chatCalls(east!), chatCalls(west!)]).toEqual([answered['w_east'], answered['w_west']]);
  }, 60_000);

  it('least-busy: while one member streams a long answer, the next calls go to the idle one', async () => {
    const [one, two] = await fakes(2);
    const { chat } = gateway({ lb_one: one!, lb_two: two! }, [
      { strategy: 'least-busy', members: ['lb_one/m', 'lb_two/m'] },
    ]);
    // Whichever member the first call reaches holds its answer open until the test says.
    const gates = [one!, two!].map((mock) => {
      let open!: () => void;
      mock.queueChat({ kind: 'held', until: new Promise<void>((resolve) => (open = resolve)) });
      return open;
    });
    const long = chat('a long one');
    const busyIndex = await Promise.race([
      one!.nextRequest('/chat/completions').then(() => 0),
      two!.nextRequest('/chat/completions').then(() => 1),
    ]);
    const [busy, idle] = busyIndex === 0 ? ['lb_one', 'lb_two'] : ['lb_two', 'lb_one'];
    // The idle member's queued hold is released at once: its calls answer as soon as they come.
    gates[1 - busyIndex]!();
    const next: string[] = [];
    for (let i = 0; i < 6; i++) next.push(by(await chat(`short ${i}`))!);
    expect(next).toEqual(Array(6).fill(idle));
    gates[busyIndex]!();
    expect(by(await long)).toBe(busy);
    // Both idle again: calls are shared between them.
    const after = new Set<string>();
    for (let i = 0; i < 4; i++) after.add(by(await chat())!);
    expect(after).toEqual(new Set(['lb_one', 'lb_two']));
  });

  it('latency: after each member is measured once, calls go to the one with the shorter time to first token', async () => {
    const [slow, fast] = await fakes(2);
    for (let i = 0; i < 20; i++) slow!.queueChat({ kind: 'ok', text: 'slow', delayMs: 300 });
    // The slow member is listed first: order in the group does not decide, the figures do.
    const { chat } = gateway({ lat_slow: slow!, lat_fast: fast! }, [
      { strategy: 'latency', members: ['lat_slow/m', 'lat_fast/m'] },
    ]);
    const answers: string[] = [];
    for (let i = 0; i < 12; i++) answers.push(by(await chat())!);
    // Warm-up: each member with no figure yet is tried once; then only the faster one.
    expect(answers.slice(0, 2).sort()).toEqual(['lat_fast', 'lat_slow']);
    expect(answers.slice(2)).toEqual(Array(10).fill('lat_fast'));
    expect(chatCalls(slow!)).toBe(1);
  });

  it('a failing member falls over to the other member of its group, then the route to its next entry (Anthropic)', async () => {
    const [a, b] = await fakes(2);
    const backup = await startAnthropicMock();
    mocks.push(backup);
    const { chat } = gateway({ f_a: a!, f_b: b!, f_backup: backup }, [
      { strategy: 'weighted', members: ['f_a/m', 'f_b/m'] },
      'f_backup/m',
    ]);
    for (let i = 0; i < 2; i++) a!.queueChat({ kind: 'status', status: 503, message: 'down' });
    // Four calls, shared 1:1: the two that chose `a` first fell over to `b` inside the group.
    const four: string[] = [];
    for (let i = 0; i < 4; i++) four.push(by(await chat())!);
    expect(four).toEqual(Array(4).fill('f_b'));
    expect([chatCalls(a!), chatCalls(b!), backup.requests.length]).toEqual([2, 4, 0]);

    // Both members fail: the call leaves the group for the route's next entry.
    a!.queueChat({ kind: 'status', status: 500, message: 'down' });
    b!.queueChat({ kind: 'status', status: 502, message: 'down' });
    expect(by(await chat())).toBe('f_backup');
    expect([chatCalls(a!), chatCalls(b!), backup.requests.length]).toEqual([3, 5, 1]);

    // A member that asks for rest (Retry-After) is skipped by the group until then, the other serving.
    const breaker = new CircuitBreaker(pool, () => ({
      failures: 5,
      windowMs: 60_000,
      cooldownMs: 30_000,
      trialMs: 0,
    }));
    a!.queueChat({ kind: 'status', status: 429, message: 'slow down', retryAfter: '120' });
    b!.queueChat({ kind: 'status', status: 503, message: 'down' });
    expect(by(await chat())).toBe('f_backup');
    await waitUntil(async () => ((await breaker.status(['f_a']))[0]!.state === 'open' ? true : undefined));
    const rested: string[] = [];
    for (let i = 0; i < 4; i++) rested.push(by(await chat())!);
    expect(rested).toEqual(Array(4).fill('f_b'));
    expect(chatCalls(a!)).toBe(4);
  });
});
