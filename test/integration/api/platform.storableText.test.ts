import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { makeWav } from '../../helpers/audio.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

// Text PostgreSQL cannot store: a NUL character, and unpaired surrogates (JSON and URLs carry both).
const nul = 'before\u0000after';
const lone = 'before\uD800after';
const message = 'must not contain U+0000 or unpaired UTF-16 surrogates';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ worker: true })));
afterAll(() => t.close());

const post = (path: string, body: unknown, requestId?: string) => {
  const req = postAs(t.http, tenant.testKey, path);
  if (requestId) req.set('x-request-id', requestId);
  return req.send(body as object);
};

describe('text PostgreSQL cannot store', () => {
  it('in a prompt answers invalid_generation_prompt, in other fields invalid_request_body naming each', async () => {
    for (const prompt of [nul, lone]) {
      const res = await post('/text', { prompt }).expect(422);
      expect(res.body.error).toMatchObject({
        code: 'invalid_generation_prompt',
        issues: [{ path: 'prompt', message }],
      });
    }
    const embeddings = await post('/embeddings', { input: ['fine', nul, lone] }).expect(422);
    expect(embeddings.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [
        { path: 'input.1', message },
        { path: 'input.2', message },
      ],
    });
    const task = await post('/tasks', { title: lone, input: nul }).expect(422);
    expect(task.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [
        { path: 'title', message },
        { path: 'input', message },
      ],
    });
  });

  it('is checked after the schema: a type error is reported first', async () => {
    const res = await post('/embeddings', { input: [nul, 3] }).expect(422);
    expect(res.body.error.code).toBe('invalid_request_body');
    expect(res.body.error.issues.map((i: { message: string }) => i.message)).not.toContain(message);
  });

  it('in the path or the query answers invalid_request_body (a cursor invalid_cursor), never a 500', async () => {
    const get = (path: string) => t.http.get(api(path)).set(bearer(tenant.testKey));
    const job = await get('/jobs/job_a%00b').expect(422);
    expect(job.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [{ path: 'path', message }],
    });
    await get('/tasks/tsk_a%00b').expect(422);
    const created = await post('/tasks', { title: 'Query', input: 'hello' }).expect(202);
    const cursor = await get(`/tasks/${created.body.task.id}/messages?cursor=a%00b`).expect(422);
    expect(cursor.body.error).toMatchObject({
      code: 'invalid_cursor',
      issues: [{ path: 'cursor', message }],
    });
    // Still fine: an escaped character PostgreSQL stores, and an unknown id.
    await get('/jobs/job_%C3%A9t%C3%A9').expect(404);
  });

  it('in a multipart field or file name answers the same codes', async () => {
    const upload = () => postAs(t.http, tenant.testKey, '/transcriptions');
    const wav = makeWav(1);
    const prompt = await upload()
      .field('prompt', nul)
      .attach('audio', wav, { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(422);
    expect(prompt.body.error).toMatchObject({
      code: 'invalid_generation_prompt',
      issues: [{ path: 'prompt', message }],
    });
    const language = await upload()
      .field('language', lone)
      .attach('audio', wav, { filename: 'a.wav', contentType: 'audio/wav' })
      .expect(422);
    expect(language.body.error.code).toBe('invalid_request_body');
    // An extended file name (RFC 5987) can carry any character percent-encoded.
    const boundary = 'storable-boundary';
    const body = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="audio"; filename*=UTF-8''a%00.wav\r\n` +
          'Content-Type: audio/wav\r\n\r\n',
      ),
      wav,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const filename = await upload()
      .set('content-type', `multipart/form-data; boundary=${boundary}`)
      .send(body)
      .expect(422);
    expect(filename.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [{ path: 'audio', message: `filename ${message}` }],
    });
  });

  it('is logged with the refused characters replaced, and the rest of its batch is kept', async () => {
    await post('/text', { prompt: nul }, 'storable-log-1').expect(422);
    // A long string is cut for the log; a cut through a surrogate pair must not break the batch.
    const long = `${'x'.repeat(199)}😀${'y'.repeat(1000)}`;
    await post('/embeddings', { input: [long] }, 'storable-log-2').expect(201);
    await post('/text', { prompt: 'fine' }, 'storable-log-3').expect(201);
    await t.deps.requestLog.flush();
    const rows = await t.deps.pool.any(sql.type(
      z.object({ request_id: z.string(), request_body: z.unknown() }),
    )`
      select request_id, request_body from request_logs where request_id like 'storable-log-%' order by request_id
    `);
    expect(rows.map((r) => r.request_id)).toEqual(['storable-log-1', 'storable-log-2', 'storable-log-3']);
    expect(rows[0]!.request_body).toEqual({ prompt: 'before\uFFFDafter' });
    expect((rows[1]!.request_body as { input: string[] }).input[0]).toMatch(/^x{199}\uFFFD…\[1201 chars\]$/);
  });
});
