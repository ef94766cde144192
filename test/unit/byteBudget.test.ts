import { describe, expect, it } from '@jest/globals';

import { ByteBudget } from '../../worker/byteBudget.ts';

const flush = () => new Promise((r) => setImmediate(r));

/** Returns the shares, after which the budget must hold nothing. */
function expectAllReturned(budget: ByteBudget, ...releases: (() => void)[]) {
  for (const release of releases) release();
  expect(budget.inUse).toBe(0);
}

describe('ByteBudget', () => {
  it('grants shares that fit at once and holds the rest until bytes come back', async () => {
    const budget = new ByteBudget(100);
    const a = await budget.take(60);
    const b = await budget.take(40);
    expect(budget.inUse).toBe(100);
    let third = false;
    const c = budget.take(10).then((release) => {
      third = true;
      return release;
    });
    await flush();
    expect(third).toBe(false);
    a();
    const releaseC = await c;
    expect(third).toBe(true);
    expect(budget.inUse).toBe(50);
    expectAllReturned(budget, b, releaseC);
  });

  it('admits waiters in arrival order, so a large one is not starved by small ones', async () => {
    const budget = new ByteBudget(100);
    const first = await budget.take(90);
    const order: string[] = [];
    const large = budget.take(80).then((release) => (order.push('large'), release));
    const small = budget.take(5).then((release) => (order.push('small'), release));
    await flush();
    // 5 bytes would fit now, but the large waiter came first.
    expect(order).toEqual([]);
    first();
    const releaseLarge = await large;
    const releaseSmall = await small;
    expect(order).toEqual(['large', 'small']);
    expect(budget.inUse).toBe(85);
    expectAllReturned(budget, releaseLarge, releaseSmall);
  });

  it('caps a share larger than the budget, so it runs alone instead of never', async () => {
    const budget = new ByteBudget(100);
    const huge = await budget.take(1_000);
    expect(budget.inUse).toBe(100);
    let other = false;
    const next = budget.take(1).then((release) => ((other = true), release));
    await flush();
    expect(other).toBe(false);
    huge();
    (await next)();
    expect(other).toBe(true);
    expect(budget.inUse).toBe(0);
  });

  it('gives a share back once however often it is returned', async () => {
    const budget = new ByteBudget(10);
    const release = await budget.take(10);
    release();
    release();
    expect(budget.inUse).toBe(0);
    const again = await budget.take(10);
    expect(budget.inUse).toBe(10);
    again();
  });
});
