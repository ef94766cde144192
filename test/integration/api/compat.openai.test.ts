import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { bearer, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { loggedCall } from '../../helpers/requestLogs.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { waitUntil } from './tasks.helpers.ts';

/**
 * The OpenAI-compatible API's own rules, in process with the default `local` provider (the SDK suites
 * in test/integration/e2e/openaiCompatible.sdks.test.ts drive the rest through real processes).
 */
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({ credits: 1_000_000, worker: true }));
});
afterAll(async () => {
  await t.close();
});

const chat = (key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  t.http
    .post('/api/openai/v1/chat/completions')
    .set({ ...bearer(key), ...headers })
    .send({ model: 'default', messages: [{ role: 'user', content: 'Hi' }], ...body });

const jobsOf = (requestId: string) =>
  t.deps.pool.oneFirst(
    sql.type(
      z.object({ n: z.number() }),
    )`select count(*)::int as n from jobs where request_id = ${requestId}`,
  );

describe('OpenAI-compatible chat in process', () => {
  it('answers with the test fixture at zero cost, as POST /text does, and logs the answer as sent', async () => {
    const res = await chat(tenant.testKey, {
      messages: [{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      object: 'chat.completion',
      model: 'svc-test-fixture',
      choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: 'stop' }],
    });
    const requestId = res.headers['x-request-id']!;
    const logged = await waitUntil(async () => (await loggedCall(t.deps.pool, requestId)) ?? undefined, 5000);
    expect(logged).toMatchObject({ operation: 'openai.chat.completions', status: 200, cost_minor: 0 });
    expect(logged.response_body).toMatchObject({ object: 'chat.completion' });
  });

  it('streams OpenAI chunks from the worker, the first naming the role, ending in [DONE]', async () => {
    const res = await chat(tenant.testKey, { stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = res.text
      .split('\n\n')
      .filter((e) => e.startsWith('data: '))
      .map((e) => e.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    type Chunk = { choices: { delta: { role?: string }; finish_reason: string | null }[] };
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Chunk);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: expect.any(Number) } });
  });

  it('refuses tools on a route whose provider cannot take them, before any job', async () => {
    const res = await chat(tenant.liveKey, {
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: {
        message: expect.stringContaining('cannot take tools'),
        type: 'invalid_request_error',
        param: 'tools',
        code: 'invalid_request_body',
      },
    });
    expect(await jobsOf(res.headers['x-request-id']!)).toBe(0);
  });

  it("bills a key of several projects to the OpenAI-Project header's project, within the key's scope", async () => {
    const other = await tenant.addProject();
    const wide = await tenant.key({ livemode: false, projectIds: [tenant.projectId, other] });
    const missing = await chat(wide.secret, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('project_id_required');
    const named = await chat(wide.secret, {}, { 'OpenAI-Project': other });
    expect(named.status).toBe(200);
    const logged = await waitUntil(
      async () => (await loggedCall(t.deps.pool, named.headers['x-request-id']!)) ?? undefined,
      5000,
    );
    expect(logged.project_id).toBe(other);
    const outside = await chat(wide.secret, {}, { 'OpenAI-Project': 'prj_elsewhere' });
    expect(outside.status).toBe(403);
    expect(outside.body.error).toMatchObject({ code: 'api_key_project_scope', type: 'permission_error' });
  });

  it('answers unknown paths, wrong methods and unreadable bodies in OpenAI’s shape', async () => {
    const unknown = await t.http.get('/api/openai/v1/assistants').set(bearer(tenant.testKey));
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatchObject({ code: 'not_found', type: 'invalid_request_error' });
    const wrong = await t.http.get('/api/openai/v1/chat/completions').set(bearer(tenant.testKey));
    expect(wrong.status).toBe(405);
    expect(wrong.headers.allow).toBe('POST');
    expect(wrong.body.error.code).toBe('method_not_allowed');
    const broken = await t.http
      .post('/api/openai/v1/chat/completions')
      .set({ ...bearer(tenant.testKey), 'content-type': 'application/json' })
      .send('{"model":');
    expect(broken.status).toBe(400);
    expect(broken.body.error).toMatchObject({ code: 'invalid_request_body', param: 'body' });
    const noKey = await t.http.post('/api/openai/v1/embeddings').send({ model: 'default', input: 'x' });
    expect(noKey.status).toBe(401);
    expect(noKey.body.error.code).toBe('invalid_api_key');
  });

  it('keeps the native API as it was: its own paths, errors and catalogue', async () => {
    const native = await t.http
      .post('/api/pub/v1/embeddings')
      .set(bearer(tenant.testKey))
      .send({ input: ['a'] });
    expect(native.status).toBe(201);
    const refused = await t.http.post('/api/pub/v1/text').set(bearer(tenant.testKey)).send({ prompt: '' });
    expect(refused.body.error).toMatchObject({
      code: 'invalid_generation_prompt',
      requestId: expect.any(String),
    });
    const reference = await t.http.get('/api/pub/v1/reference').set(bearer(tenant.testKey));
    const ids = (reference.body.packages as { id: string; operations: { id: string }[] }[]).map((p) => p.id);
    expect(ids).not.toContain('openai');
  });
});
