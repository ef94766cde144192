import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makePool } from '../../../shared/db/pool.ts';
import { type DatabasePool, sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { CircuitBreaker, type CircuitPolicy } from '../../../shared/providers/circuitBreaker.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';

// Two breakers on two pools stand for two worker processes; time is an injected clock both share.
let t: TestContext;
let otherPool: DatabasePool;
let now = Date.parse('2026-11-26T12:00:00.000Z');
const clock = () => now;
const policy: CircuitPolicy = { failures: 3, windowMs: 60_000, cooldownMs: 30_000, trialMs: 5_000 };

beforeAll(async () => {
  t = await setupTestContext({ DATABASE_POOL_SIZE: '10' });
  otherPool = await makePool(t.databaseUrl, { maxPoolSize: 10, name: 'other-worker' });
});
afterAll(async () => {
  await otherPool.end();
  await t.close();
});

/** Two processes' breakers, each with its own cache of `cacheMs`. */
function twoProcesses(cacheMs = 2_000) {
  return [
    new CircuitBreaker(t.deps.pool, () => policy, { clock, cacheMs }),
    new CircuitBreaker(otherPool, () => policy, { clock, cacheMs }),
  ] as const;
}
const provider = () => newId('prv').toLowerCase();
const rows = z.object({ n: z.number() });

describe('provider circuit breakers in PostgreSQL', () => {
  it('opens after N failures in a row, skips during the cooldown, then lets exactly one trial through', async () => {
    const [a, b] = twoProcesses(0);
    const p = provider();
    expect(await a.failed(p)).toBe('closed');
    expect(await b.failed(p)).toBe('closed');
    expect(await a.admit(p)).toBe('call');
    expect(await b.failed(p)).toBe('open');
    expect((await b.status([p]))[0]).toEqual({
      name: p,
      state: 'open',
      failures: 3,
      openUntil: new Date(now + policy.cooldownMs).toISOString(),
    });
    expect([await a.admit(p), await b.admit(p)]).toEqual(['skip', 'skip']);
    now += policy.cooldownMs - 1;
    expect(await a.admit(p)).toBe('skip');
    now += 1;
    // Half-open: one trial for the whole fleet, however many ask at once.
    const asks = await Promise.all([a, b, a, b, a, b].map((breaker) => breaker.admit(p)));
    expect(asks.filter((x) => x === 'trial')).toHaveLength(1);
    expect(asks.filter((x) => x === 'skip')).toHaveLength(5);
    await a.succeeded(p);
    expect([await a.admit(p), await b.admit(p)]).toEqual(['call', 'call']);
    expect((await a.status([p]))[0]).toEqual({ name: p, state: 'closed', failures: 0, openUntil: null });
  });

  it('reopens for a whole cooldown when the trial fails; a trial that never reports is retried after its timeout', async () => {
    const [a, b] = twoProcesses(0);
    const p = provider();
    for (let i = 0; i < 3; i++) await a.failed(p);
    now += policy.cooldownMs;
    expect(await a.admit(p)).toBe('trial');
    expect(await a.failed(p)).toBe('open');
    now += policy.cooldownMs - 1;
    expect(await b.admit(p)).toBe('skip');
    now += 1;
    expect(await b.admit(p)).toBe('trial');
    // b's trial never reports (its process died): another is let through once its timeout passed.
    now += policy.trialMs - 1;
    expect(await a.admit(p)).toBe('skip');
    now += 1;
    expect(await a.admit(p)).toBe('trial');
  });

  it('counts failures from every process at once, each exactly once', async () => {
    const [a, b] = twoProcesses(0);
    const p = provider();
    const many = { ...policy, failures: 40 };
    const fleet = [
      new CircuitBreaker(t.deps.pool, () => many, { clock }),
      new CircuitBreaker(otherPool, () => many, { clock }),
    ];
    await Promise.all(Array.from({ length: 39 }, (_, i) => fleet[i % 2]!.failed(p)));
    expect((await a.status([p]))[0]).toMatchObject({ state: 'closed', failures: 39 });
    expect(await fleet[0]!.failed(p)).toBe('open');
    expect(await b.admit(p)).toBe('skip');
  });

  it('starts the count again when the first failure is older than the window, and a success resets it', async () => {
    const [a] = twoProcesses(0);
    const p = provider();
    await a.failed(p);
    await a.failed(p);
    now += policy.windowMs + 1;
    expect(await a.failed(p)).toBe('closed');
    expect((await a.status([p]))[0]!.failures).toBe(1);
    await a.failed(p);
    await a.succeeded(p);
    await a.failed(p);
    await a.failed(p);
    expect((await a.status([p]))[0]).toMatchObject({ state: 'closed', failures: 2 });
  });

  it('rests a provider for its Retry-After, in every process, without opening it', async () => {
    const [a, b] = twoProcesses(0);
    const p = provider();
    expect(await a.failed(p, 2_000)).toBe('resting');
    // Operators see it open until the rest ends: calls skip it all the same.
    expect((await b.status([p]))[0]).toMatchObject({
      state: 'open',
      failures: 1,
      openUntil: new Date(now + 2_000).toISOString(),
    });
    now += 1_999;
    expect([await a.admit(p), await b.admit(p)]).toEqual(['skip', 'skip']);
    now += 1;
    expect([await a.admit(p), await b.admit(p)]).toEqual(['call', 'call']);
    // A success does not cut short a rest asked for later by another answer.
    await b.failed(p, 10_000);
    await a.succeeded(p);
    expect(await b.admit(p)).toBe('skip');
  });

  it('reads the state once per cache period per process; what a process records it sees at once', async () => {
    const [a, b] = twoProcesses(2_000);
    const p = provider();
    expect(await b.admit(p)).toBe('call');
    for (let i = 0; i < 3; i++) await a.failed(p);
    expect(await a.admit(p)).toBe('skip');
    // b read before the circuit opened: it learns within its cache period.
    expect(await b.admit(p)).toBe('call');
    now += 2_000;
    expect(await b.admit(p)).toBe('skip');
  });

  it('keeps a circuit it opened while a read was in flight: the older snapshot does not close it again', async () => {
    // The read's rows come back from PostgreSQL before the failure is written, and reach the
    // breaker only after it: the order a loaded worker saw in CI.
    let queried!: () => void;
    const readTaken = new Promise<void>((resolve) => (queried = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slowReads = new Proxy(t.deps.pool, {
      get(pool, key, receiver) {
        if (key !== 'any') return Reflect.get(pool, key, receiver) as unknown;
        return async (...args: Parameters<typeof pool.any>) => {
          const result = await pool.any(...args);
          queried();
          await held;
          return result;
        };
      },
    });
    const breaker = new CircuitBreaker(slowReads, () => policy, { clock, cacheMs: 2_000 });
    const p = provider();
    await breaker.failed(p);
    await breaker.failed(p);
    const admitting = breaker.admit(p);
    await readTaken;
    expect(await breaker.failed(p)).toBe('open');
    release();
    expect(await admitting).toBe('skip');
    expect(await breaker.admit(p)).toBe('skip');
  });

  it('writes nothing for a success of a provider that never failed', async () => {
    const [a] = twoProcesses(0);
    const p = provider();
    await a.succeeded(p);
    const count = await t.deps.pool.oneFirst(sql.type(rows)`
      select count(*)::int as n from provider_circuits where provider = ${p}
    `);
    expect(count).toBe(0);
  });
});
