import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeResponseCache } from '../../../shared/cache/responseCache.ts';
import { deleteExpiredResponseCacheEntries } from '../../../shared/db/queries/responseCacheEntries.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { principalFor } from '../../helpers/fixtures.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { mockReply, type OpenAiMock } from '../../helpers/openaiMock.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

// The opt-in response cache (Cache-TTL) in front of the fake OpenAI-compatible provider, whose
// request count shows whether a call reached it. A hit costs 2 here (the default is 0) so the charge
// shows that the cache price, not the provider's (10 minor units an output token), was applied.
const hitPrice = 2;
let t: TestContext;
let tenant: Tenant;
let other: Tenant;
let mock: OpenAiMock;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({
    env: { PRICES: JSON.stringify({ cacheHitPerCall: hitPrice, textOutputPer1MTokens: 10_000_000 }) },
    credits: 1_000_000,
    worker: true,
  }));
  other = await createTenant(t.deps.pool, { credits: 1_000_000 });
  server = await t.listen();
});
afterAll(async () => {
  await t.close();
});

/** Provider calls (any endpoint) since the test began. */
let providerCalls: () => number;
beforeEach(() => {
  const at = mock.requests.length;
  providerCalls = () => mock.requests.length - at;
});

const balance = async (who: Tenant) =>
  (await findWorkspaceBalance(t.deps.pool, who.workspaceId))!.balance_minor;

const meteringRow = z.object({ usage: z.unknown(), cost_minor: z.number(), model: z.string().nullable() });
const meteringOf = (requestId: string) =>
  t.deps.pool.any(
    sql.type(
      meteringRow,
    )`select usage, cost_minor, model from metering_records where request_id = ${requestId}`,
  );
const entriesOf = (who: Tenant) =>
  t.deps.pool.oneFirst(
    sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from response_cache_entries where workspace_id = ${who.workspaceId}`,
  );
const logged = (requestId: string) =>
  waitUntil(async () => (await loggedCall(t.deps.pool, requestId)) ?? undefined);

const text = (key: string, body: Record<string, unknown>, ttl?: string) => {
  const req = postAs(t.http, key, '/text');
  return (ttl === undefined ? req : req.set('Cache-TTL', ttl)).send(body);
};

async function streamText(key: string, body: Record<string, unknown>, ttl: string) {
  const res = await fetch(`${server.origin}${api('/text')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'cache-ttl': ttl, ...bearer(key) },
    body: JSON.stringify({ ...body, stream: true }),
  });
  const events = await readEvents(res);
  const deltas = events
    .filter((e) => e.event === 'delta')
    .map((e) => (JSON.parse(e.data) as { text: string }).text);
  const done = events.find((e) => e.event === 'done');
  return { res, deltas, done: done && (JSON.parse(done.data) as Record<string, unknown>) };
}

describe('POST /text with Cache-TTL', () => {
  it('answers an identical request from the cache: same body at the cache price, hit header, provider not called', async () => {
    const first = await text(tenant.liveKey, { prompt: 'cache me', system: 'be brief' }, '600');
    expect(first.status).toBe(201);
    expect(first.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    expect(first.body.text).toBe(mockReply('cache me'));
    expect(providerCalls()).toBe(1);
    expect(first.body.cost.amount).toBeGreaterThan(hitPrice);

    const before = await balance(tenant);
    // The same request: keys in another order and the default output budget spelled out.
    const second = await text(
      tenant.liveKey,
      { maxTokens: 4096, system: 'be brief', prompt: 'cache me' },
      '60',
    );
    expect(second.status).toBe(201);
    expect(second.headers['cache-status']).toMatch(/^svc; hit; ttl=(59[0-9]|600)$/);
    expect(second.body).toEqual({ ...first.body, cost: { amount: hitPrice, currency: 'USD' } });
    expect(providerCalls()).toBe(1);
    expect(before - (await balance(tenant))).toBe(hitPrice);

    const hitId = second.headers['x-request-id']!;
    expect(await meteringOf(hitId)).toEqual([
      { usage: { cacheHits: 1 }, cost_minor: hitPrice, model: first.body.model },
    ]);
    expect(await logged(first.headers['x-request-id']!)).toMatchObject({ cache_status: 'miss' });
    expect(await logged(hitId)).toMatchObject({ cache_status: 'hit', cost_minor: hitPrice, status: 201 });
  });

  it("never answers another workspace's identical request from the first one's entry", async () => {
    const mine = await text(tenant.liveKey, { prompt: 'one per workspace' }, '600');
    expect(mine.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    const theirs = await text(other.liveKey, { prompt: 'one per workspace' }, '600');
    expect(theirs.status).toBe(201);
    expect(theirs.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    expect(providerCalls()).toBe(2);
    // Each workspace now hits its own entry.
    const again = await text(other.liveKey, { prompt: 'one per workspace' }, '600');
    expect(again.headers['cache-status']).toMatch(/^svc; hit;/);
    expect(providerCalls()).toBe(2);
  });

  it('replays a streamed hit as the deltas and done of the stored answer, without calling the provider', async () => {
    const first = await streamText(tenant.liveKey, { prompt: 'stream and keep' }, '600');
    expect(first.res.headers.get('cache-status')).toBe('svc; fwd=uri-miss');
    expect(first.deltas.join('')).toBe(mockReply('stream and keep'));
    expect(providerCalls()).toBe(1);

    const replay = await streamText(tenant.liveKey, { prompt: 'stream and keep' }, '600');
    expect(replay.res.status).toBe(201);
    expect(replay.res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(replay.res.headers.get('cache-status')).toMatch(/^svc; hit;/);
    expect(replay.deltas.join('')).toBe(mockReply('stream and keep'));
    expect(replay.done).toEqual({ ...first.done, cost: { amount: hitPrice, currency: 'USD' } });
    // A JSON call of the same request is the same request.
    const json = await text(tenant.liveKey, { prompt: 'stream and keep' }, '600');
    expect(json.headers['cache-status']).toMatch(/^svc; hit;/);
    expect(json.body).toEqual(replay.done);
    expect(providerCalls()).toBe(1);
  });

  it('misses once the entry has expired, and the hourly purge removes it', async () => {
    const first = await text(tenant.liveKey, { prompt: 'short lived' }, '600');
    expect(first.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    // The entry's TTL runs out (moved into the past rather than slept through).
    await t.deps.pool.query(sql.typeAlias('void')`
      update response_cache_entries set expires_at = now() - interval '1 second'
      where workspace_id = ${tenant.workspaceId} and answer->>'text' = ${mockReply('short lived')}`);
    const second = await text(tenant.liveKey, { prompt: 'short lived' }, '600');
    expect(second.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    expect(providerCalls()).toBe(2);

    await t.deps.pool.query(sql.typeAlias('void')`
      update response_cache_entries set expires_at = now() - interval '1 second'
      where workspace_id = ${tenant.workspaceId}`);
    await deleteExpiredResponseCacheEntries(t.deps.pool);
    expect(await entriesOf(tenant)).toBe(0);
  });

  it('neither reads nor writes the cache for a request without the header', async () => {
    await text(tenant.liveKey, { prompt: 'cached once' }, '600');
    const entries = await entriesOf(tenant);
    const plain = await text(tenant.liveKey, { prompt: 'cached once' });
    expect(plain.status).toBe(201);
    expect(plain.headers['cache-status']).toBeUndefined();
    expect(providerCalls()).toBe(2);
    await text(tenant.liveKey, { prompt: 'never cached' });
    expect(await entriesOf(tenant)).toBe(entries);
    expect(await logged(plain.headers['x-request-id']!)).toMatchObject({ cache_status: null });
  });

  it('leaves test keys on their fixtures: bypassed, nothing read or written', async () => {
    const entries = await entriesOf(tenant);
    const res = await text(tenant.testKey, { prompt: 'cache me' }, '600');
    expect(res.status).toBe(201);
    expect(res.headers['cache-status']).toBe('svc; fwd=bypass; detail=test-key');
    expect(res.body.cost).toEqual({ amount: 0, currency: 'USD' });
    expect(res.body.text).not.toBe(mockReply('cache me'));
    expect(await entriesOf(tenant)).toBe(entries);
    expect(providerCalls()).toBe(0);
  });

  it.each(['0', '86401', 'soon'])(
    'refuses Cache-TTL %s as invalid_request_body on the header',
    async (ttl) => {
      const res = await text(tenant.liveKey, { prompt: 'bad ttl' }, ttl);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('invalid_request_body');
      expect(providerCalls()).toBe(0);
    },
  );
});

describe('POST /embeddings with Cache-TTL', () => {
  it('answers identical input from the cache, and different input from the provider', async () => {
    const first = await postAs(t.http, tenant.liveKey, '/embeddings')
      .set('Cache-TTL', '300')
      .send({ input: ['alpha', 'beta'] });
    expect(first.status).toBe(201);
    expect(first.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    const hit = await postAs(t.http, tenant.liveKey, '/embeddings')
      .set('Cache-TTL', '300')
      .send({ input: ['alpha', 'beta'] });
    expect(hit.headers['cache-status']).toMatch(/^svc; hit;/);
    expect(hit.body).toEqual({ ...first.body, cost: { amount: hitPrice, currency: 'USD' } });
    expect(providerCalls()).toBe(1);
    const reordered = await postAs(t.http, tenant.liveKey, '/embeddings')
      .set('Cache-TTL', '300')
      .send({ input: ['beta', 'alpha'] });
    expect(reordered.headers['cache-status']).toBe('svc; fwd=uri-miss; stored');
    expect(providerCalls()).toBe(2);
  });
});

describe('size limits', () => {
  it('keeps no answer over the entry limit, and none that would take the workspace past its budget', async () => {
    const workspace = await createTenant(t.deps.pool);
    const cache = makeResponseCache({
      pool: t.deps.pool,
      config: {
        providers: t.deps.config.providers,
        responseCache: { maxEntryBytes: 100, maxWorkspaceBytes: 150 },
      },
    });
    const principal = await principalFor(t.deps.pool, workspace.liveKey);
    const call = (prompt: string) => ({
      principal,
      capability: 'text' as const,
      operation: 'text.generate',
      request: { prompt },
      ttlSeconds: 60,
    });
    const answer = (n: number) => ({ text: 'x'.repeat(n) });
    const store = (prompt: string, n: number) =>
      cache.store(call(prompt), cache.keyOf(call(prompt)), answer(n));
    expect(await store('too big', 200)).toBe('too-large');
    expect(await store('first', 80)).toBe('stored');
    // 80 + 80 bytes of JSON would pass the 150-byte budget.
    expect(await store('second', 80)).toBe('workspace-full');
    // Renewing an entry does not count it twice.
    expect(await store('first', 80)).toBe('stored');
    expect(await cache.lookup(call('second'))).toMatchObject({ status: 'miss' });
    expect(await cache.lookup(call('first'))).toMatchObject({ status: 'hit', answer: answer(80) });
    // Another workspace has a budget of its own.
    const second = await createTenant(t.deps.pool);
    const elsewhere = { ...call('second'), principal: await principalFor(t.deps.pool, second.liveKey) };
    expect(await cache.store(elsewhere, cache.keyOf(elsewhere), answer(80))).toBe('stored');
  });
});
