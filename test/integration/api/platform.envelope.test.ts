import { brotliCompressSync, gzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Validator } from '@seriousme/openapi-schema-validator';

import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

type Answer = { error?: { issues?: unknown } };

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

function expectEnvelope(body: unknown, code: string, requestId: string) {
  expect(body).toEqual({ error: expect.objectContaining({ code, message: expect.any(String), requestId }) });
}

describe('request ids', () => {
  it('echoes a valid caller x-request-id and puts it in the error envelope', async () => {
    const res = await t.http.get(api('/me')).set('x-request-id', 'caller.id-123~_x').expect(401);
    expect(res.headers['x-request-id']).toBe('caller.id-123~_x');
    expectEnvelope(res.body, 'invalid_api_key', 'caller.id-123~_x');
  });

  it('replaces an invalid caller id (too short, too long, bad characters) with a generated one', async () => {
    for (const bad of ['short', 'x'.repeat(129), 'has space here', 'slash/not/ok']) {
      const res = await t.http
        .get(api('/me'))
        .set(bearer(tenant.testKey))
        .set('x-request-id', bad)
        .expect(200);
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9A-Za-z]{24}$/);
    }
    const longest = 'y'.repeat(128);
    const ok = await t.http
      .get(api('/me'))
      .set(bearer(tenant.testKey))
      .set('x-request-id', longest)
      .expect(200);
    expect(ok.headers['x-request-id']).toBe(longest);
  });

  it('generates distinct ids on success responses too', async () => {
    const a = await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    const b = await t.http.get(api('/me')).set(bearer(tenant.testKey)).expect(200);
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('error envelope', () => {
  it('unknown route: 404 not_found', async () => {
    const res = await t.http.get(api('/nowhere')).set(bearer(tenant.testKey)).expect(404);
    expectEnvelope(res.body, 'not_found', res.headers['x-request-id']!);
    const outside = await t.http.get('/totally/elsewhere').expect(404);
    expectEnvelope(outside.body, 'not_found', outside.headers['x-request-id']!);
  });

  it('wrong method: 405 with Allow', async () => {
    const res = await t.http.delete(api('/me')).set(bearer(tenant.testKey)).expect(405);
    expect(res.headers.allow).toBe('GET');
    expectEnvelope(res.body, 'method_not_allowed', res.headers['x-request-id']!);
  });

  it('malformed JSON: 422 invalid_request_body', async () => {
    const res = await postAs(t.http, tenant.testKey, '/embeddings')
      .set('Content-Type', 'application/json')
      .send('{"input": [')
      .expect(422);
    expectEnvelope(res.body, 'invalid_request_body', res.headers['x-request-id']!);
    expect(res.body.error.issues).toEqual([{ path: 'body', message: 'malformed JSON' }]);
  });

  it('a compressed body: read when it inflates (gzip, br), invalid_request_body when it does not or its coding is unknown', async () => {
    const server = await listenOnLoopback(t.app);
    const send = async (encoding: string, body: Buffer, contentType = 'application/json') => {
      const res = await fetch(`${server.origin}${api('/images')}`, {
        method: 'POST',
        headers: { ...bearer(tenant.testKey), 'content-type': contentType, 'content-encoding': encoding },
        body,
      });
      return {
        status: res.status,
        body: (await res.json()) as Answer,
        requestId: res.headers.get('x-request-id')!,
      };
    };
    // No worker runs here: an aspect ratio error shows the body was inflated and read.
    const json = Buffer.from(JSON.stringify({ prompt: 'compressed', aspectRatio: '2:1' }));
    try {
      for (const [encoding, packed] of [
        ['gzip', gzipSync(json)],
        ['br', brotliCompressSync(json)],
      ] as const) {
        const res = await send(encoding, packed);
        expect(res.status).toBe(422);
        expectEnvelope(res.body, 'invalid_image_aspect_ratio', res.requestId);
      }
      for (const encoding of ['gzip', 'deflate', 'br']) {
        const res = await send(encoding, Buffer.from('not compressed at all'));
        expect(res.status).toBe(422);
        expectEnvelope(res.body, 'invalid_request_body', res.requestId);
        expect(res.body.error?.issues).toEqual([
          { path: 'body', message: 'unreadable or wrongly compressed body' },
        ]);
      }
      const unknown = await send('compress', json);
      expect(unknown.status).toBe(422);
      expect(unknown.body.error?.issues).toEqual([
        { path: 'content-encoding', message: 'use gzip, deflate, br or none' },
      ]);
      const charset = await send('identity', json, 'application/json; charset=ebcdic-xyz');
      expect(charset.status).toBe(422);
      expect(charset.body.error?.issues).toEqual([{ path: 'content-type', message: 'send JSON as UTF-8' }]);
    } finally {
      await server.close();
    }
  });

  it('a body nested too deeply: 422 invalid_request_body, never a stack overflow', async () => {
    const nested = (levels: number) => `{"values":{"a":${'['.repeat(levels)}${']'.repeat(levels)}}}`;
    for (const levels of [100, 200_000]) {
      const res = await postAs(t.http, tenant.testKey, '/workflows/wf_missing/run')
        .set('Content-Type', 'application/json')
        .send(nested(levels))
        .expect(422);
      expect(res.body.error.issues).toEqual([
        { path: 'body', message: 'arrays and objects nest deeper than 64 levels' },
      ]);
    }
    // Shallow enough: the request goes on to the route.
    await postAs(t.http, tenant.testKey, '/workflows/wf_missing/run')
      .set('Content-Type', 'application/json')
      .send(nested(50))
      .expect(404);
  });

  it('schema violations name every offending field', async () => {
    const res = await postAs(t.http, tenant.testKey, '/images')
      .send({ prompt: 42, aspectRatio: '2:1', extra: true })
      .expect(422);
    expect(res.body.error.code).toBe('invalid_request_body');
    const paths = res.body.error.issues.map((i: { path: string }) => i.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['prompt', 'aspectRatio']));
    expect(res.body.error.issues.length).toBeGreaterThanOrEqual(3);
  });

  it('spec-specific codes win for their own fields', async () => {
    const empty = await postAs(t.http, tenant.testKey, '/images').send({ prompt: '' }).expect(422);
    expect(empty.body.error.code).toBe('invalid_generation_prompt');
    const long = await postAs(t.http, tenant.testKey, '/text')
      .send({ prompt: 'x'.repeat(2001) })
      .expect(422);
    expect(long.body.error.code).toBe('invalid_generation_prompt');
    const ratio = await postAs(t.http, tenant.testKey, '/images')
      .send({ prompt: 'a cat', aspectRatio: '2:1' })
      .expect(422);
    expect(ratio.body.error.code).toBe('invalid_image_aspect_ratio');
    const missing = await postAs(t.http, tenant.testKey, '/images').send({}).expect(422);
    expect(missing.body.error.code).toBe('invalid_request_body');
    expect(missing.body.error.issues).toEqual([expect.objectContaining({ path: 'prompt' })]);
  });

  it('Idempotency-Key of a bad length is invalid_idempotency_key (400)', async () => {
    const res = await postAs(t.http, tenant.testKey, '/tasks')
      .set('Idempotency-Key', 'k'.repeat(256))
      .send({ input: 'hello' })
      .expect(400);
    expect(res.body.error.code).toBe('invalid_idempotency_key');
  });
});

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3.1 document without a key, with scopes and error codes', async () => {
    const res = await t.http.get(api('/openapi.json')).expect(200);
    const doc = res.body;
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.servers).toEqual([{ url: 'http://127.0.0.1:1/api/pub/v1' }]);
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/openapi.json'].get.security).toEqual([]);
    expect(doc.paths['/status'].get.security).toEqual([]);
    const images = doc.paths['/images'].post;
    expect(images['x-svc-scope']).toBe('images.generate');
    expect(images['x-svc-error-codes']).toEqual(
      expect.arrayContaining([
        'invalid_api_key',
        'api_key_operation_scope',
        'rate_limited',
        'invalid_image_aspect_ratio',
      ]),
    );
    const specPaths = [
      '/openapi.json',
      '/status',
      '/mcp',
      '/me',
      '/reference',
      '/images',
      '/text',
      '/embeddings',
      '/transcriptions',
      '/ocr',
      '/videos',
      '/videos/{videoId}/file',
      '/tasks',
      '/tasks/{taskId}',
      '/tasks/{taskId}/messages',
      '/tasks/{taskId}/stream',
      '/staff',
      '/staff/{address}/trigger',
      '/workflows/{workflowId}/run',
      '/files',
      '/files/uploads',
      '/files/uploads/{uploadId}/complete',
      '/files/{fileId}/render',
      '/brain/search',
      '/jobs/{jobId}',
    ];
    for (const p of specPaths) expect(Object.keys(doc.paths)).toContain(p);
  });
});

describe('GET /reference', () => {
  it('lists the full catalogue from the OpenAPI document', async () => {
    const res = await t.http.get(api('/reference')).set(bearer(tenant.testKey)).expect(200);
    const text = res.body.packages.find((p: { id: string }) => p.id === 'text');
    expect(text).toMatchObject({ title: 'Text generation', description: expect.any(String) });
    expect(text.operations).toEqual([
      {
        id: 'text.generate',
        method: 'POST',
        path: '/text',
        title: 'Generate text',
        description: expect.any(String),
        billed: true,
        allowed: true,
      },
    ]);
    const jobs = res.body.packages.find((p: { id: string }) => p.id === 'jobs');
    expect(jobs.operations[0]).toMatchObject({
      id: 'jobs.read',
      method: 'GET',
      path: '/jobs/{jobId}',
      billed: false,
    });
  });
});
