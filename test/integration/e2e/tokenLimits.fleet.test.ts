import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { admin } from '../../helpers/cli.ts';
import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * Tokens per minute held across the Procfile's fleet (2 web + 2 worker processes on one
 * PostgreSQL): 8 clients race POST /text through both web processes against a workspace limit. The
 * limiter's windows are calendar minutes and spawned processes cannot take an injected clock, so the
 * burst (a few seconds) starts away from a minute's edge and the figures are checked per window the
 * database recorded, not by waiting a minute out.
 */
let t: TestContext;
let mock: OpenAiMock;
let fleet: Fleet;
let tenant: Tenant;
let limitsSet: unknown;

const limit = 3000;
const maxTokens = 200;

beforeAll(async () => {
  mock = await startOpenAiMock();
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 10_000_000, rateLimitPerMinute: 1_000_000 });
  const set = await admin(
    ['workspace', 'set-limits', '--workspace', tenant.workspaceId, '--tokens-per-minute', String(limit)],
    { DATABASE_URL: t.databaseUrl },
  );
  if (set.code !== 0) throw new Error(`workspace set-limits failed: ${JSON.stringify(set.stderr)}`);
  limitsSet = set.stdout;
  fleet = await startFleet(
    {
      ...openaiEnv(mock),
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      DATABASE_POOL_SIZE: '5',
      WORKER_CONCURRENCY: '4',
      LOG_LEVEL: 'info',
    },
    { webs: 2, workers: 2 },
  );
}, 180_000);

afterAll(async () => {
  await fleet?.stop();
  await t?.close();
  await mock?.close();
});

type Outcome = { status: number; tokens: number; headers: Headers };

async function call(origin: string, prompt: string): Promise<Outcome> {
  const res = await fetch(`${origin}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, maxTokens }),
  });
  const body = (await res.json()) as { usage?: { inputTokens: number; outputTokens: number } };
  const tokens = res.status === 201 ? body.usage!.inputTokens + body.usage!.outputTokens : 0;
  return { status: res.status, tokens, headers: res.headers };
}

const windowsRow = z.object({ window_start: z.string(), used: z.number() });

describe('tokens per minute across 2 web and 2 worker processes', () => {
  it('never admits more than the limit in a window under concurrent load, and settles to the real count', async () => {
    expect(limitsSet).toEqual({
      workspace: { id: tenant.workspaceId, rateLimitPerMinute: 1_000_000, tokensPerMinute: limit },
    });
    await awayFromMinuteEdge();
    const outcomes: Outcome[] = [];
    // The clients call until the workspace has refused 24 calls between them: the limit was reached
    // (not each client its own count: a client left alone would be admitted call after call, each
    // settling to a few tokens, which is right but long).
    let refusedSoFar = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, client) => {
        const origin = fleet.webs[client % 2]!.origin;
        for (let i = 0; refusedSoFar < 24 && i < 300; i++) {
          const outcome = await call(origin, `client ${client} call ${i} ${'x'.repeat(40)}`);
          outcomes.push(outcome);
          if (outcome.status === 429) refusedSoFar++;
        }
      }),
    );
    const admitted = outcomes.filter((o) => o.status === 201);
    const refused = outcomes.filter((o) => o.status === 429);
    expect(outcomes.every((o) => o.status === 201 || o.status === 429)).toBe(true);
    expect(refused.length).toBeGreaterThanOrEqual(24);
    const reservation = 2 * 60 + maxTokens; // the prompt's bytes (at most ~60) and the output budget
    // Settled calls give back what they did not use: more calls fit than whole reservations would.
    expect(admitted.length * reservation).toBeGreaterThan(limit);

    const refusal = refused[0]!.headers;
    expect(Number(refusal.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(refusal.get('x-ratelimit-limit-tokens')).toBe(String(limit));
    expect(Number(refusal.get('x-ratelimit-remaining-tokens'))).toBeLessThan(reservation);
    expect(refusal.get('x-ratelimit-reset-tokens')).toMatch(/^\d+s$/);
    expect(admitted[0]!.headers.get('x-ratelimit-limit-requests')).toBe('1000000');
    expect(admitted[0]!.headers.get('x-ratelimit-limit-tokens')).toBe(String(limit));

    // Every reservation settled (no job left holding one), each window at the real count of the
    // calls it admitted, and none past the limit by more than one call.
    // (A worker settles just after the job's end commits, so the last ones may trail the answers.)
    await waitUntil(async () => {
      const left = await t.deps.pool.oneFirst(
        sql.type(z.object({ n: z.number() }))`
          select count(*)::int as n from token_reservations where workspace_id = ${tenant.workspaceId}`,
      );
      return left === 0 ? true : undefined;
    }, 10_000);
    const windows = await t.deps.pool.any(
      sql.type(windowsRow)`
        select window_start::text, used::float8 as used from token_limit_windows
        where scope = ${`ws:${tenant.workspaceId}`}`,
    );
    const biggestCall = Math.max(...admitted.map((o) => o.tokens));
    for (const w of windows) expect(w.used).toBeLessThanOrEqual(limit + biggestCall);
    const real = admitted.reduce((n, o) => n + o.tokens, 0);
    expect(windows.reduce((n, w) => n + w.used, 0)).toBe(real);
    expect(real).toBeLessThanOrEqual(windows.length * limit + biggestCall);
    process.stderr.write(
      `token limits: ${admitted.length} admitted (${real} tokens), ${refused.length} refused, ` +
        `${windows.length} window(s), limit ${limit}\n`,
    );
  }, 120_000);
});
