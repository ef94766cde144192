import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { readEvents } from '../../helpers/sse.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ credits: 100_000, worker: true }));
  server = await t.listen();
});
afterAll(async () => {
  await t.close();
});

const meteringRow = z.object({
  job_id: z.string(),
  cost_minor: z.number(),
  livemode: z.boolean(),
  usage: z.record(z.string(), z.number()),
  request_id: z.string().nullable(),
});

function meteringFor(requestId: string) {
  return t.deps.pool.any(sql.type(meteringRow)`
    select job_id, cost_minor, livemode, usage, request_id from metering_records where request_id = ${requestId}
  `);
}

function jobOf(requestId: string) {
  return t.deps.pool.one(sql.type(
    z.object({
      id: z.string(),
      status: z.string(),
      result: z.unknown(),
      input: z.unknown(),
      type: z.string(),
    }),
  )`
    select id, status, result, input, type from jobs where request_id = ${requestId}
  `);
}

async function postStream(key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return fetch(`${server.origin}${api('/text')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...bearer(key), ...headers },
    body: JSON.stringify(body),
  });
}

describe('POST /text', () => {
  it('answers a test key with the fixture through the queue, at no cost, keeping nothing', async () => {
    const res = await postAs(t.http, tenant.testKey, '/text').send({ prompt: 'Say hi' }).expect(201);
    expect(res.body).toEqual({
      text: 'Test mode reply. Received 6 characters of input: "Say hi"',
      model: 'svc-test-fixture',
      usage: { inputTokens: 2, outputTokens: expect.any(Number) },
      cost: { amount: 0, currency: 'USD' },
    });
    const requestId = res.headers['x-request-id']!;
    // Neither the prompt nor the output is kept once delivered (emptied in a batch within ~100 ms).
    let job = await jobOf(requestId);
    for (let i = 0; i < 40 && (job.result !== null || JSON.stringify(job.input) !== '{}'); i++) {
      await new Promise((r) => setTimeout(r, 50));
      job = await jobOf(requestId);
    }
    expect(job).toMatchObject({ type: 'text.generate', status: 'succeeded', result: null, input: {} });
    expect(await meteringFor(requestId)).toEqual([
      expect.objectContaining({ job_id: job.id, cost_minor: 0, livemode: false }),
    ]);
  });

  it('answers a live key with the local stand-in and bills the settled cost', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    const res = await postAs(t.http, tenant.liveKey, '/text')
      .send({ prompt: 'Summarise the quarter', system: 'Be brief.', maxTokens: 200 })
      .expect(201);
    expect(res.body).toEqual({
      text: 'Local echo (offline stand-in, no model): Summarise the quarter',
      model: 'local-echo-1',
      usage: { inputTokens: 9, outputTokens: 16 },
      cost: { amount: 1, currency: 'USD' },
    });
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(before.balance_minor - after.balance_minor).toBe(1);
    expect(after.reserved_minor).toBe(0);
    const records = await meteringFor(res.headers['x-request-id']!);
    expect(records).toEqual([
      expect.objectContaining({ cost_minor: 1, livemode: true, usage: { inputTokens: 9, outputTokens: 16 } }),
    ]);
  });

  it('stops at maxTokens', async () => {
    const res = await postAs(t.http, tenant.liveKey, '/text')
      .send({ prompt: 'one two three four five six seven eight nine ten eleven twelve', maxTokens: 4 })
      .expect(201);
    expect(res.body.usage.outputTokens).toBeLessThanOrEqual(4);
    expect(res.body.text.length).toBeLessThanOrEqual(16);
  });

  it('streams delta events then a done event equal to the non-streaming body (stream: true)', async () => {
    const res = await postStream(tenant.testKey, { prompt: 'Stream me a reply', stream: true });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const events = await readEvents(res);
    const deltas = events.filter((e) => e.event === 'delta');
    const done = events.filter((e) => e.event === 'done');
    expect(events.at(-1)!.event).toBe('done');
    expect(done).toHaveLength(1);
    expect(deltas.length).toBeGreaterThan(1);
    const body = JSON.parse(done[0]!.data);
    const plain = await postAs(t.http, tenant.testKey, '/text')
      .send({ prompt: 'Stream me a reply' })
      .expect(201);
    expect(body).toEqual(plain.body);
    expect(deltas.map((e) => (JSON.parse(e.data) as { text: string }).text).join('')).toBe(body.text);
    for (const delta of deltas) expect(Object.keys(JSON.parse(delta.data))).toEqual(['text']);
  });

  it('streams when the client asks with Accept: text/event-stream, and bills a live key', async () => {
    const res = await postStream(
      tenant.liveKey,
      { prompt: 'Accept header please' },
      { accept: 'text/event-stream' },
    );
    expect(res.status).toBe(201);
    const events = await readEvents(res);
    const done = JSON.parse(events.find((e) => e.event === 'done')!.data);
    expect(done).toEqual({
      text: 'Local echo (offline stand-in, no model): Accept header please',
      model: 'local-echo-1',
      usage: { inputTokens: 5, outputTokens: 16 },
      cost: { amount: 1, currency: 'USD' },
    });
    const text = events
      .filter((e) => e.event === 'delta')
      .map((e) => JSON.parse(e.data).text as string)
      .join('');
    expect(text).toBe(done.text);
    const requestId = res.headers.get('x-request-id')!;
    expect(await meteringFor(requestId)).toEqual([expect.objectContaining({ cost_minor: 1 })]);
  });

  it('answers a stream that cannot start with the plain error envelope, not an event stream', async () => {
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const res = await postStream(broke.liveKey, { prompt: 'No money', stream: true });
    expect(res.status).toBe(402);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('insufficient_credits');
  });
});

describe('POST /text errors', () => {
  const post = (body: unknown, key = tenant.testKey) => postAs(t.http, key, '/text').send(body as object);

  it.each([
    ['empty', ''],
    ['over 2000 characters', 'x'.repeat(2001)],
  ])('answers invalid_generation_prompt for a prompt %s', async (_name, prompt) => {
    const res = await post({ prompt }).expect(422);
    expect(res.body.error).toMatchObject({
      code: 'invalid_generation_prompt',
      issues: [expect.objectContaining({ path: 'prompt' })],
    });
  });

  it('accepts a prompt of exactly 2000 characters', async () => {
    const res = await post({ prompt: 'y'.repeat(2000), maxTokens: 5 }).expect(201);
    expect(res.body.model).toBe('svc-test-fixture');
  });

  it('answers invalid_request_body naming each field of the wrong type', async () => {
    const res = await post({ prompt: 42, maxTokens: '5', stream: 'yes', system: 7 }).expect(422);
    expect(res.body.error.code).toBe('invalid_request_body');
    const paths = (res.body.error.issues as { path: string }[]).map((i) => i.path).sort();
    expect(paths).toEqual(['maxTokens', 'prompt', 'stream', 'system']);
  });

  it('answers invalid_request_body for a missing prompt and an unknown field', async () => {
    const res = await post({ promt: 'typo' }).expect(422);
    expect(res.body.error.code).toBe('invalid_request_body');
  });

  it.each([0, 9007199254740992, 1.5])('bounds maxTokens (%p)', async (maxTokens) => {
    const res = await post({ prompt: 'hi', maxTokens }).expect(422);
    expect(res.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [expect.objectContaining({ path: 'maxTokens' })],
    });
  });

  it('accepts maxTokens at the documented maximum', async () => {
    const res = await post({ prompt: 'hi', maxTokens: 9007199254740991 }).expect(201);
    expect(res.body.cost).toEqual({ amount: 0, currency: 'USD' });
  });

  it('answers project_id_required for a key spanning two projects, and honours projectId', async () => {
    const other = await tenant.addProject('Second');
    const key = await tenant.key({ livemode: false, projectIds: [tenant.projectId, other] });
    const res = await post({ prompt: 'hi' }, key.secret).expect(422);
    expect(res.body.error.code).toBe('project_id_required');
    const ok = await post({ prompt: 'hi', projectId: other }, key.secret).expect(201);
    const records = await meteringFor(ok.headers['x-request-id']!);
    expect(records).toHaveLength(1);
    const project = await t.deps.pool.oneFirst(sql.type(z.object({ project_id: z.string() }))`
      select project_id from metering_records where request_id = ${ok.headers['x-request-id']!}
    `);
    expect(project).toBe(other);
  });

  it('answers api_key_project_scope for a projectId outside the key', async () => {
    const res = await post({ prompt: 'hi', projectId: 'prj_elsewhere' }).expect(403);
    expect(res.body.error.code).toBe('api_key_project_scope');
  });

  it('answers insufficient_credits when the balance is used up, creating no job', async () => {
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const res = await post({ prompt: 'hi' }, broke.liveKey).expect(402);
    expect(res.body.error.code).toBe('insufficient_credits');
    const jobs = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from jobs where workspace_id = ${broke.workspaceId}
    `);
    expect(jobs).toBe(0);
    // A test key spends nothing, so an empty balance does not stop it.
    await post({ prompt: 'hi' }, broke.testKey).expect(201);
  });

  it('answers key_spend_limit_reached when the key hit its monthly cap', async () => {
    const capped = await tenant.key({ monthlySpendCapMinor: 0 });
    const res = await post({ prompt: 'hi' }, capped.secret).expect(402);
    expect(res.body.error.code).toBe('key_spend_limit_reached');
  });

  it('answers api_key_operation_scope for a key scoped to other packages', async () => {
    const key = await tenant.key({ scopeLevel: 'package', packages: ['images'] });
    const res = await post({ prompt: 'hi' }, key.secret).expect(403);
    expect(res.body.error.code).toBe('api_key_operation_scope');
  });

  it('generates once per Idempotency-Key and keeps nothing of a delivered output', async () => {
    await post({ prompt: 'once' }).set('Idempotency-Key', 'text-once-1').expect(201);
    const again = await post({ prompt: 'once' }).set('Idempotency-Key', 'text-once-1').expect(410);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.error).toMatchObject({
      code: 'idempotent_output_discarded',
      requestId: again.headers['x-request-id'],
    });
  });
});
