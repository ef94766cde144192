import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext({ METRICS: 'off' });
  tenant = await createTenant(t.deps.pool);
});
afterAll(() => t.close());

describe('METRICS=off', () => {
  it('leaves the web process without a registry or GET /metrics, and the API as it was', async () => {
    expect(t.deps.metrics).toBeUndefined();
    await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    const scrape = await t.http.get('/metrics').expect(404);
    expect(scrape.body.error.code).toBe('not_found');
  });
});
