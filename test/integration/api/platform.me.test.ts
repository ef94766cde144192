import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

describe('GET /me', () => {
  it('describes a single-project test key', async () => {
    const res = await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    expect(res.body.app).toEqual({ id: tenant.projectId, name: 'Main' });
    expect(res.body.projects).toEqual([{ id: tenant.projectId, name: 'Main' }]);
    expect(res.body.key).toMatchObject({ name: 'Key', livemode: false, type: 'api_key' });
    expect(res.body.scope).toEqual({ level: 'app', packages: [], operations: [] });
    expect(res.headers['x-request-id']).toMatch(/^req_/);
  });
});
