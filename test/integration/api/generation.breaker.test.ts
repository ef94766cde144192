import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { parseMetrics, sampleValue } from '../../helpers/metrics.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { alphaThenBetaEnv } from '../../helpers/providerRoutes.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

// `alpha` first, `beta` behind it; alpha's circuit opens after 2 failures in a row, for 2 s.
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;
const cooldownMs = 2000;

beforeAll(async () => {
  [alpha, beta] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  ({ t, tenant } = await contextWithTenant({
    env: alphaThenBetaEnv(alpha, beta, {
      failures: 2,
      windowSeconds: 60,
      cooldownSeconds: cooldownMs / 1000,
    }),
    credits: 1_000_000,
    worker: true,
  }));
});
afterAll(async () => {
  await t.close();
  await Promise.all([alpha.close(), beta.close()]);
});

let alphaAt = 0;
beforeEach(() => {
  alphaAt = alpha.requests.length;
});
const alphaCalls = () => alpha.requests.length - alphaAt;

async function answeredBy(prompt: string): Promise<string> {
  const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt }).expect(201);
  return String(res.body.model).split('/')[0]!;
}

const until = z.object({ open_until: z.string().nullable(), resting_until: z.string().nullable() });
/** Waits until the time the circuit row names has passed (the cooldown or rest runs on the real clock). */
async function past(column: 'open_until' | 'resting_until') {
  const row = await t.deps.pool.one(sql.type(until)`
    select open_until, resting_until from provider_circuits where provider = 'alpha'
  `);
  const at = Date.parse(row[column]!);
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now()) + 50));
}

/** alpha's circuit as GET /metrics shows it (read from PostgreSQL, so any process reports it). */
async function circuit() {
  const res = await t.http.get('/metrics').expect(200);
  const metrics = parseMetrics(res.text);
  const state = (s: string) =>
    sampleValue(metrics, 'svc_provider_circuit_state', { provider: 'alpha', state: s });
  return { closed: state('closed'), open: state('open'), 'half-open': state('half-open') };
}

describe('circuit breaking', () => {
  it('skips a provider whose circuit opened during its cooldown, then makes one trial call', async () => {
    alpha.queueChat(
      { kind: 'status', status: 503, message: 'down' },
      { kind: 'status', status: 503, message: 'down' },
    );
    expect([await answeredBy('one'), await answeredBy('two')]).toEqual(['beta', 'beta']);
    expect(alphaCalls()).toBe(2);
    expect(await circuit()).toEqual({ closed: 0, open: 1, 'half-open': 0 });
    // Open: the next calls go straight to beta, alpha is not asked at all.
    expect([await answeredBy('three'), await answeredBy('four')]).toEqual(['beta', 'beta']);
    expect(alphaCalls()).toBe(2);
    await past('open_until');
    // Half-open: one trial, which succeeds and closes the circuit.
    expect(await answeredBy('trial')).toBe('alpha');
    expect(alphaCalls()).toBe(3);
    expect(await answeredBy('closed again')).toBe('alpha');
    // The gauges share one reading of PostgreSQL for 2 s, so the closing shows within that.
    const closed = await waitUntil(async () => {
      const now = await circuit();
      return now.closed === 1 ? now : undefined;
    }, 5000);
    expect(closed).toEqual({ closed: 1, open: 0, 'half-open': 0 });
  });

  it('keeps a provider that answered 429 with Retry-After: 2 out of rotation for 2 s', async () => {
    alpha.queueChat({ kind: 'status', status: 429, message: 'slow down', retryAfter: '2' });
    const sent = Date.now();
    expect(await answeredBy('limited')).toBe('beta');
    expect(await answeredBy('still resting')).toBe('beta');
    expect(alphaCalls()).toBe(1);
    await past('resting_until');
    expect(Date.now() - sent).toBeGreaterThanOrEqual(2000);
    expect(await answeredBy('rested')).toBe('alpha');
  });
});
