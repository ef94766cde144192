import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let a: TestContext['http'];
let b: TestContext['http'];

// The limiters' clock, shared by both api instances: a window ends only when a test moves it, so a
// burst of requests can never straddle a minute, and Retry-After is exact.
const minute = 60_000;
let now = 0;
/** Half a minute into a fresh window (after every window used so far). */
const midWindow = () => {
  now = (Math.floor(Math.max(now, Date.now()) / minute) + 1) * minute + 30_000;
};

beforeAll(async () => {
  t = await setupTestContext({}, { rateLimitClock: () => now });
  // Another api instance: its own pool, LISTEN connection and limiter, on the same database.
  b = (await t.secondApp()).http;
  a = t.http;
});
afterAll(() => t.close());

describe('rate limiting per workspace', () => {
  it('counts authenticated operations of both api instances against one budget, with Retry-After', async () => {
    midWindow();
    const tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      // Both keys of the workspace, different operations, alternating instances: one budget.
      statuses.push((await a.get(api('/me')).set(bearer(tenant.testKey))).status);
      statuses.push((await b.get(api('/reference')).set(bearer(tenant.liveKey))).status);
    }
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);

    const limited = await b.get(api('/me')).set(bearer(tenant.testKey)).expect(429);
    expect(limited.body.error).toEqual({
      code: 'rate_limited',
      message: expect.any(String),
      requestId: limited.headers['x-request-id'],
    });
    // Half a minute is left of the window, on either instance.
    expect(limited.headers['retry-after']).toBe('30');
    now += 20_000;
    const later = await a.get(api('/me')).set(bearer(tenant.testKey)).expect(429);
    expect(later.headers['retry-after']).toBe('10');

    // Another workspace has its own budget.
    const neighbour = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
    await a.get(api('/me')).set(bearer(neighbour.testKey)).expect(200);

    // Once Retry-After has passed, the next window serves again, on both instances.
    now += 10_000;
    await a.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    await b.get(api('/me')).set(bearer(tenant.liveKey)).expect(200);
  });

  it('never grants more than the limit to concurrent requests across instances', async () => {
    midWindow();
    const tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 100 });
    const requests = Array.from({ length: 140 }, (_, i) =>
      (i % 2 === 0 ? a : b).get(api('/me')).set(bearer(tenant.testKey)),
    );
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(100);
    // Each instance may strand at most one unspent lease block (limit / 50 = 2 requests).
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(96);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });

  it('does not limit the public endpoints, even called with the key of a workspace over its limit', async () => {
    midWindow();
    const tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 2 });
    const me = (instance: typeof a) => instance.get(api('/me')).set(bearer(tenant.testKey));
    expect([(await me(a)).status, (await me(b)).status, (await me(a)).status]).toEqual([200, 200, 429]);
    const publicStatuses: number[] = [];
    for (const instance of [a, b]) {
      for (let i = 0; i < 3; i++) {
        publicStatuses.push((await instance.get(api('/status')).set(bearer(tenant.testKey))).status);
        publicStatuses.push((await instance.get(api('/openapi.json')).set(bearer(tenant.testKey))).status);
      }
    }
    expect(publicStatuses).toEqual(Array(12).fill(200));
    // ...while the workspace's authenticated calls are still refused.
    expect((await me(b)).status).toBe(429);
  });
});
