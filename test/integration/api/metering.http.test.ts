import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant } from '../../helpers/fixtures.ts';

let t: TestContext;

beforeAll(async () => {
  t = await setupTestContext({ DATABASE_POOL_SIZE: '20', WORKER_CONCURRENCY: '8' });
  await t.startWorker();
});
afterAll(() => t.close());

const recorded = (workspaceId: string) =>
  t.deps.pool.one(sql.type(z.object({ n: z.number(), total: z.number() }))`
    select count(*) as n, coalesce(sum(cost_minor), 0) as total from metering_records where workspace_id = ${workspaceId}
  `);

describe('billed calls over HTTP, 50 at once', () => {
  it('never overspend the balance; every success is metered, every refusal is insufficient_credits', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 30 });
    const calls = Array.from({ length: 50 }, (_, i) =>
      postAs(t.http, tenant.liveKey, '/embeddings').send({ input: [`text number ${i}`] }),
    );
    const responses = await Promise.all(calls);
    const ok = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status === 402);
    expect(ok.length + refused.length).toBe(50);
    for (const r of refused) expect(r.body.error.code).toBe('insufficient_credits');
    const balance = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    expect(balance!.reserved_minor).toBe(0);
    expect(balance!.balance_minor).toBeGreaterThanOrEqual(0);
    const charged = ok.reduce((sum, r) => sum + (r.body.cost.amount as number), 0);
    expect(charged).toBe(30 - balance!.balance_minor);
    expect(await recorded(tenant.workspaceId)).toEqual({ n: ok.length, total: charged });
    expect(ok.length).toBeGreaterThan(0);
  });

  it("never overspend a key's monthly cap", async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 100_000 });
    const key = await tenant.key({ monthlySpendCapMinor: 10 });
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        postAs(t.http, key.secret, '/embeddings').send({ input: [`t${i}`] }),
      ),
    );
    const ok = responses.filter((r) => r.status === 201);
    const capped = responses.filter((r) => r.status === 402);
    expect(ok.length + capped.length).toBe(50);
    for (const r of capped) expect(r.body.error.code).toBe('key_spend_limit_reached');
    const spent = ok.reduce((sum, r) => sum + (r.body.cost.amount as number), 0);
    expect(spent).toBeLessThanOrEqual(10);
    expect((await recorded(tenant.workspaceId)).total).toBe(spent);
  });
});

describe('the project rule', () => {
  it('needs projectId for a multi-project key and meters against the named project', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 1000 });
    const second = await tenant.addProject('Second');
    const key = await tenant.key({ projectIds: [tenant.projectId, second] });
    const missing = await postAs(t.http, key.secret, '/embeddings')
      .send({ input: ['a'] })
      .expect(422);
    expect(missing.body.error.code).toBe('project_id_required');
    await postAs(t.http, key.secret, '/embeddings')
      .send({ input: ['a'], projectId: second })
      .expect(201);
    const projects = await t.deps.pool.anyFirst(sql.type(z.object({ project_id: z.string() }))`
      select project_id from metering_records where workspace_id = ${tenant.workspaceId}
    `);
    expect(projects).toEqual([second]);
    // A single-project key needs no projectId.
    await postAs(t.http, tenant.liveKey, '/embeddings')
      .send({ input: ['b'] })
      .expect(201);
    // Validation comes before the project rule.
    const invalid = await postAs(t.http, key.secret, '/embeddings').send({ input: 'not a list' }).expect(422);
    expect(invalid.body.error.code).toBe('invalid_request_body');
  });
});
