import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { admin } from '../../helpers/cli.ts';
import { awayFromMinuteEdge } from '../../helpers/clock.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { OpenAiMock } from '../../helpers/openaiMock.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

// A key's own tokens per minute (`key create --tokens-per-minute`), through the api and a worker
// calling the OpenAI-compatible fake: what an attacker holding the key can and cannot get through.
let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let limitedKey: string;

const keyLimit = 1000;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({ credits: 10_000_000, worker: true }));
  const created = await admin(
    [
      'key',
      'create',
      '--member',
      tenant.memberId,
      '--projects',
      tenant.projectId,
      '--live',
      '--tokens-per-minute',
      String(keyLimit),
    ],
    { DATABASE_URL: t.databaseUrl },
  );
  if (created.code !== 0) throw new Error(`key create failed: ${JSON.stringify(created.stderr)}`);
  limitedKey = (created.stdout as { key: { secret: string } }).key.secret;
});
afterAll(async () => {
  await t.close();
});

const keyWindowUsed = () =>
  t.deps.pool.oneFirst(
    sql.type(z.object({ used: z.number() }))`
      select coalesce(sum(w.used), 0)::float8 as used from token_limit_windows w
      join api_keys k on w.scope = 'key:' || k.id
      where k.workspace_id = ${tenant.workspaceId} and k.tokens_per_minute is not null`,
  );

const jobsOfKey = () =>
  t.deps.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from jobs j join api_keys k on k.id = j.key_id
      where k.workspace_id = ${tenant.workspaceId} and k.tokens_per_minute is not null`,
  );

describe("a key's tokens per minute", () => {
  it('refuses a call whose maxTokens alone passes the limit, before any job or provider call', async () => {
    const sent = mock.requests.length;
    const res = await postAs(t.http, limitedKey, '/text').send({ prompt: 'hi', maxTokens: 32_768 });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('rate_limited');
    expect(res.body.error.message).toMatch(/more than the key's limit of 1000 tokens per minute/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.headers['x-ratelimit-limit-tokens']).toBe(String(keyLimit));
    expect(await jobsOfKey()).toBe(0);
    expect(mock.requests.length).toBe(sent);
  });

  it('admits concurrent calls only while their reservations fit, and frees what they did not use', async () => {
    await awayFromMinuteEdge();
    // 12 racing calls of 300 reserved tokens each (the prompt's bytes and maxTokens 290): the first
    // three always fit; a fourth only once an earlier one has settled to its real count.
    const racing = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        postAs(t.http, limitedKey, '/text').send({
          prompt: `race ${i.toString().padStart(4, '0')}`,
          maxTokens: 290,
        }),
      ),
    );
    const admitted = racing.filter((r) => r.status === 201);
    expect(racing.every((r) => r.status === 201 || r.status === 429)).toBe(true);
    expect(admitted.length).toBeGreaterThanOrEqual(3);
    expect(admitted[0]!.headers['x-ratelimit-limit-tokens']).toBe(String(keyLimit));
    expect(admitted[0]!.headers['x-ratelimit-limit-requests']).toBeDefined();
    const real = admitted.reduce((n, r) => n + r.body.usage.inputTokens + r.body.usage.outputTokens, 0);
    await waitUntil(async () => ((await keyWindowUsed()) === real ? true : undefined), 10_000);
    expect(real).toBeLessThanOrEqual(keyLimit);
    // Settled to their real counts (a few tokens each): without that, 900 of 1000 would still be held.
    const again = await postAs(t.http, limitedKey, '/text').send({ prompt: 'after', maxTokens: 290 });
    expect(again.status).toBe(201);
    // A streamed answer carries them too: set before its headers go out.
    const streamed = await postAs(t.http, limitedKey, '/text').send({
      prompt: 'flow',
      maxTokens: 50,
      stream: true,
    });
    expect(streamed.status).toBe(201);
    expect(streamed.headers['content-type']).toMatch(/text\/event-stream/);
    expect(Number(streamed.headers['x-ratelimit-remaining-tokens'])).toBeLessThan(keyLimit);
    // The workspace's other keys are not bound by this key's limit.
    const other = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'other', maxTokens: 5000 });
    expect(other.status).toBe(201);
    expect(other.headers['x-ratelimit-limit-tokens']).toBeUndefined();
  });
});
