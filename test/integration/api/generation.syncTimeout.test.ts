import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { OpenAiMock } from '../../helpers/openaiMock.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({
    // The request gives up long before the provider call would time out.
    env: { SYNC_TIMEOUT_MS: '1000', PROVIDER_TIMEOUT_MS: '120000' },
    credits: 1_000_000,
    worker: true,
  }));
});
afterAll(() => t.close());

const jobOf = (requestId: string) =>
  t.deps.pool.one(sql.type(
    z.object({ status: z.string(), cost_minor: z.number().nullable(), cancelled: z.boolean() }),
  )`
    select status, cost_minor, cancel_requested_at is not null as cancelled from jobs where request_id = ${requestId}
  `);

async function waitForFinish(requestId: string) {
  for (let i = 0; i < 100; i++) {
    const job = await jobOf(requestId);
    if (!['queued', 'running'].includes(job.status)) return job;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job of ${requestId} never finished`);
}

describe('a synchronous call that outlives SYNC_TIMEOUT_MS', () => {
  it('answers internal_error with retry advice, stops the provider call, and bills nothing', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    mock.queueChat({ kind: 'stall' });
    const providerCall = mock.nextRequest('/chat/completions');
    const started = Date.now();
    const res = await postAs(t.http, tenant.liveKey, '/text')
      .set('x-request-id', 'req_sync_timeout_1')
      .send({ prompt: 'take your time' })
      .expect(500);
    // Long before the provider call's own timeout, even on a busy machine.
    expect(Date.now() - started).toBeLessThan(45_000);
    expect(res.body.error).toMatchObject({
      code: 'internal_error',
      message: expect.stringMatching(/retry/),
      requestId: 'req_sync_timeout_1',
    });
    // The worker heard the cancellation and hung up on the provider.
    await (
      await providerCall
    ).closed;
    const job = await waitForFinish('req_sync_timeout_1');
    expect(job).toEqual({ status: 'cancelled', cost_minor: 0, cancelled: true });
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(after).toEqual(before);
  });
});
