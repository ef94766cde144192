import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant } from '../../helpers/fixtures.ts';

let t: TestContext;

beforeAll(async () => {
  t = await setupTestContext();
});
afterAll(() => t.close());

describe('rate limiting per workspace', () => {
  it('is shared by two api instances and answers 429 rate_limited with Retry-After', async () => {
    const tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
    const other = await t.secondApp();
    await awayFromMinuteEdge();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await t.http.get(api('/me')).set(bearer(tenant.testKey))).status);
      statuses.push((await other.http.get(api('/me')).set(bearer(tenant.liveKey))).status);
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.slice(10)).toEqual([429, 429]);
    const limited = await other.http.get(api('/me')).set(bearer(tenant.testKey)).expect(429);
    expect(limited.body.error.code).toBe('rate_limited');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another workspace is unaffected.
    const neighbour = await createTenant(t.deps.pool, { rateLimitPerMinute: 10 });
    await t.http.get(api('/me')).set(bearer(neighbour.testKey)).expect(200);
  });

  it('never grants more than the limit to concurrent requests across instances', async () => {
    const tenant = await createTenant(t.deps.pool, { rateLimitPerMinute: 100 });
    const other = await t.secondApp();
    await awayFromMinuteEdge();
    const requests = Array.from({ length: 140 }, (_, i) =>
      (i % 2 === 0 ? t.http : other.http).get(api('/me')).set(bearer(tenant.testKey)),
    );
    const statuses = (await Promise.all(requests)).map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeLessThanOrEqual(100);
    // Each instance may strand at most one unspent lease block (limit / 50 = 2 requests).
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(96);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });

  it('does not limit the public endpoints', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.http.get(api('/status'));
      expect(res.status).toBe(200);
    }
  });
});
