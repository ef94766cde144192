import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { mockReply, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

// POST /text through the api, the queue and a worker, text routed to a weighted group of two
// OpenAI-compatible fakes sharing 1:1. Output tokens cost 1 at `alpha` and 3 at `beta`, so the
// balance shows which member each call was billed at.
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;

const perToken = (units: number) => ({ textInputPer1MTokens: 0, textOutputPer1MTokens: units * 1_000_000 });

beforeAll(async () => {
  [alpha, beta] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  const env = mockProvidersEnv(
    { alpha: { mock: alpha, breaker: { failures: 1000 } }, beta: { mock: beta } },
    {
      routes: {
        text: [{ strategy: 'weighted', members: ['alpha/gpt-alpha', 'beta/gpt-beta'] }],
      },
      prices: { 'alpha/gpt-alpha': perToken(1), 'beta/gpt-beta': perToken(3) },
    },
  );
  ({ t, tenant } = await contextWithTenant({ env, credits: 1_000_000, worker: true }));
});
afterAll(async () => {
  await t.close();
  await Promise.all([alpha.close(), beta.close()]);
});

const balance = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor;
const meteringOf = (requestId: string) =>
  t.deps.pool.one(
    sql.type(
      z.object({ provider: z.string().nullable(), model: z.string().nullable(), cost_minor: z.number() }),
    )`
      select provider, model, cost_minor from metering_records where request_id = ${requestId}`,
  );

async function postText(prompt: string) {
  const before = await balance();
  const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt });
  expect(res.status).toBe(201);
  return { body: res.body, spent: before - (await balance()), requestId: res.headers['x-request-id']! };
}

describe('a balanced group through the api', () => {
  it('shares calls between its members, each billed and named at the member that answered', async () => {
    const calls = [];
    for (let i = 0; i < 4; i++) calls.push(await postText(`share ${i}`));
    const answeredBy = calls.map((c) => c.body.model as string).sort();
    expect(answeredBy).toEqual(['alpha/gpt-alpha', 'alpha/gpt-alpha', 'beta/gpt-beta', 'beta/gpt-beta']);
    for (const { body, spent, requestId } of calls) {
      const [provider, model] = (body.model as string).split('/');
      const price = provider === 'alpha' ? 1 : 3;
      expect(body.cost.amount).toBe(price * body.usage.outputTokens);
      expect(spent).toBe(body.cost.amount);
      expect(await meteringOf(requestId)).toEqual({ provider, model, cost_minor: body.cost.amount });
    }

    // The fifth call goes to `alpha` first (1:1 in turn); it fails, and `beta` answers inside the
    // same job attempt, billed at its own price.
    alpha.queueChat({ kind: 'status', status: 503, message: 'overloaded' });
    const before = { alpha: alpha.requests.length, beta: beta.requests.length };
    const failedOver = await postText('fail over');
    expect(failedOver.body).toMatchObject({ text: mockReply('fail over'), model: 'beta/gpt-beta' });
    expect({ alpha: alpha.requests.length - before.alpha, beta: beta.requests.length - before.beta }).toEqual(
      {
        alpha: 1,
        beta: 1,
      },
    );
    expect(failedOver.spent).toBe(3 * failedOver.body.usage.outputTokens);
  });
});
