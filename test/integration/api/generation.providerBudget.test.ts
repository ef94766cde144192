import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { estimateTokens } from '../../../shared/providers/tokens.ts';
import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { mockProvidersEnv } from '../../helpers/providerRoutes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

// POST /text through the api, the queue and a worker, text routed to `alpha` then `beta`, alpha's
// upstream account allowed `tpm` tokens per minute (PROVIDERS). The fakes count what they are sent.
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;

const tpm = 200;
const maxTokens = 150;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  const env = mockProvidersEnv(
    { alpha: { mock: alpha, tpm }, beta: { mock: beta } },
    { routes: { text: ['alpha/gpt-alpha', 'beta/gpt-beta'] } },
  );
  ({ t, tenant } = await contextWithTenant({ env, credits: 1_000_000, worker: true }));
});
afterAll(async () => {
  await t.close();
  await Promise.all([alpha.close(), beta.close()]);
});

const alphaWindow = () =>
  t.deps.pool.any(
    sql.type(z.object({ requests: z.number(), tokens: z.number() }))`
      select requests, tokens::float8 as tokens from provider_budget_windows where provider = 'alpha'`,
  );

describe("a provider entry's tpm budget", () => {
  it('moves calls to the next entry once spent, without calling the provider for a 429', async () => {
    await awayFromMinuteEdge();
    const answers: { model: string; tokens: number }[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: `budget ${i}`, maxTokens });
      expect(res.status).toBe(201);
      answers.push({
        model: res.body.model,
        tokens: res.body.usage.inputTokens + res.body.usage.outputTokens,
      });
    }
    const byAlpha = answers.filter((a) => a.model === 'alpha/gpt-alpha');
    const byBeta = answers.filter((a) => a.model === 'beta/gpt-beta');
    // Alpha answered while a call's estimate (its prompt and the whole output budget) still fitted,
    // its window settled to the real counts in between; then beta took every call.
    expect(byAlpha.length).toBeGreaterThanOrEqual(2);
    expect(byBeta.length).toBeGreaterThanOrEqual(1);
    expect(answers.slice(0, byAlpha.length).every((a) => a.model === 'alpha/gpt-alpha')).toBe(true);
    expect(alpha.requests.length).toBe(byAlpha.length);
    expect(beta.requests.length).toBe(byBeta.length);
    const [window] = await alphaWindow();
    expect(window!.requests).toBe(byAlpha.length);
    expect(window!.tokens).toBe(byAlpha.reduce((n, a) => n + a.tokens, 0));
    // The first call passed by: its estimate (prompt and output budget) did not fit what was left.
    expect(window!.tokens + estimateTokens(`budget ${byAlpha.length}`) + maxTokens).toBeGreaterThan(tpm);
    expect(window!.tokens).toBeLessThanOrEqual(tpm);
  }, 60_000);
});
