import http from 'node:http';
import { gzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import type { DatabasePool } from 'slonik';
import supertest from 'supertest';

import { makeApp } from '../../../api/app.ts';
import { FailedAuthLimiter } from '../../../api/auth/failedAuthLimiter.ts';
import { KeyCache } from '../../../api/auth/keyCache.ts';
import { makePool } from '../../../shared/db/pool.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ env: { AUTH_FAILURES_PER_MINUTE: '20' } })));
afterAll(() => t.close());

type Answer = { status: number; headers: http.IncomingHttpHeaders; body: { error?: { code: string } } };

/**
 * Sends the headers and the first `part` of a body, then nothing more (the connection stays open):
 * resolves with the answer the server gives before the body is complete.
 */
function sendPartly(
  origin: string,
  path: string,
  headers: Record<string, string | number>,
  part: Buffer,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${origin}${path}`, { method: 'POST', headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(text) });
        req.destroy();
      });
    });
    req.on('error', (error) => {
      // The server may close the connection after answering; the answer is what counts.
      if ((error as NodeJS.ErrnoException).code !== 'ECONNRESET') reject(error);
    });
    req.write(part);
  });
}

/** A gzip body of 20,000 long object keys: ~20 MB of JSON in well under 100 KB. */
function keyBomb(): Buffer {
  const fields = Array.from({ length: 20_000 }, (_, i) => `"${'k'.repeat(1000)}${i}":1`);
  return gzipSync(Buffer.from(`{${fields.join(',')}}`));
}

describe('work before authentication', () => {
  it('answers a call without a valid key before reading its body', async () => {
    const server = await listenOnLoopback(t.app);
    try {
      const body = keyBomb();
      expect(body.length).toBeLessThan(200_000);
      const headers = {
        'Content-Type': 'application/json',
        'Content-Encoding': 'gzip',
        'Content-Length': body.length,
      };
      // Half the body is sent and the rest never comes: only an answer that did not wait for it arrives.
      const half = body.subarray(0, body.length >> 1);
      const noKey = await sendPartly(server.origin, api('/text'), headers, half);
      expect(noKey.status).toBe(401);
      expect(noKey.body.error?.code).toBe('invalid_api_key');
      const fakeKey = await sendPartly(
        server.origin,
        api('/text'),
        { ...headers, Authorization: `Bearer svc_sk_test_${'Z'.repeat(30)}` },
        half,
      );
      expect(fakeKey.body.error?.code).toBe('invalid_api_key');
    } finally {
      await server.close();
    }
  });

  it("refuses a body over its operation's limit by its Content-Length, without reading it", async () => {
    const server = await listenOnLoopback(t.app);
    try {
      const answer = await sendPartly(
        server.origin,
        api('/brain/search'),
        { 'Content-Type': 'application/json', 'Content-Length': 10_000_000, ...bearer(tenant.testKey) },
        Buffer.from('{"query":"'),
      );
      expect(answer.status).toBe(422);
      expect(answer.body.error?.code).toBe('invalid_request_body');
      expect(answer.headers.connection).toBe('close');
    } finally {
      await server.close();
    }
  });

  it('reads each operation up to its own limit from the OpenAPI document', async () => {
    // 100 KB is over the default 64 KiB (brain search) and under POST /text's 512 KiB.
    const long = 'x'.repeat(100_000);
    const search = await postAs(t.http, tenant.testKey, '/brain/search').send({ query: long }).expect(422);
    expect(search.body.error).toMatchObject({
      code: 'invalid_request_body',
      issues: [{ path: 'body', message: 'at most 65536 bytes (decompressed)' }],
    });
    const text = await postAs(t.http, tenant.testKey, '/text')
      .send({ prompt: 'hi', system: long })
      .expect(422);
    // Read whole and validated: the schema's own limit answers.
    expect(text.body.error.issues[0].path).toBe('system');
    // OCR takes files: over its limit the answer is file_too_large.
    const ocr = await postAs(t.http, tenant.testKey, '/ocr')
      .set('Content-Type', 'application/json')
      .send(`{"mimeType":"image/png","data":"${'A'.repeat(29_500_000)}"}`)
      .expect(413);
    expect(ocr.body.error.code).toBe('file_too_large');
  });

  it('refuses a compressed body that inflates more than 100-fold, even under the limit', async () => {
    const server = await listenOnLoopback(t.app);
    const send = (packed: Buffer) =>
      fetch(`${server.origin}${api('/brain/search')}`, {
        method: 'POST',
        headers: {
          ...bearer(tenant.testKey),
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        },
        body: packed,
      });
    try {
      // 60 KB of JSON (under brain search's 64 KiB) that gzip packs into a few hundred bytes.
      const json = Buffer.from(`{"query":"quarterly notes"${' '.repeat(60_000)}}`);
      const packed = gzipSync(json);
      expect(json.length / packed.length).toBeGreaterThan(100);
      const res = await send(packed);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { error: unknown }).error).toMatchObject({
        code: 'invalid_request_body',
        issues: [{ path: 'content-encoding', message: 'a compressed body may inflate at most 100-fold' }],
      });
      // A body that compresses as JSON usually does is read.
      const ordinary = await send(gzipSync(Buffer.from(JSON.stringify({ query: 'quarterly notes' }))));
      expect(ordinary.status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('a flood of fake keys', () => {
  let lookups = 0;
  let app: Express;
  let countingPool: DatabasePool;

  beforeAll(async () => {
    // The app's key lookups go through a pool that counts the statements reading api_keys.
    countingPool = await makePool(t.databaseUrl, {
      maxPoolSize: 2,
      interceptors: [
        {
          name: 'count-key-lookups',
          beforeQueryExecution: async (_context, query) => {
            if (/from api_keys/i.test(query.sql)) lookups++;
            return null;
          },
        },
      ],
    });
    app = makeApp({
      ...t.deps,
      keyCache: new KeyCache(countingPool, t.deps.hub),
      failedAuth: new FailedAuthLimiter(20),
    });
  });
  afterAll(() => countingPool.end());

  it('costs one lookup for a repeated unknown key', async () => {
    const fake = `svc_sk_live_${'Q'.repeat(40)}`;
    lookups = 0;
    for (let i = 0; i < 10; i++) {
      await supertest(app).get(api('/me')).set('X-Forwarded-For', '10.9.0.1').set(bearer(fake)).expect(401);
    }
    expect(lookups).toBe(1);
  });

  it('throttles an address after its failures, before any lookup, but not its working keys', async () => {
    const request = supertest(app);
    const from = '10.9.0.2';
    // The valid key is looked up (and known) before the flood starts.
    await request.get(api('/me')).set('X-Forwarded-For', from).set(bearer(tenant.testKey)).expect(200);
    lookups = 0;
    const codes: string[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 200; i++) {
      const fake = `svc_sk_live_${i.toString().padStart(40, 'F')}`;
      const res = await request.get(api('/me')).set('X-Forwarded-For', from).set(bearer(fake));
      codes.push(res.body.error.code);
      retryAfter ??= res.headers['retry-after'];
    }
    expect(codes.filter((c) => c === 'invalid_api_key')).toHaveLength(20);
    expect(codes.slice(20).every((c) => c === 'rate_limited')).toBe(true);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    expect(lookups).toBe(20);
    // The address's working key still works; another address is not affected.
    await request.get(api('/me')).set('X-Forwarded-For', from).set(bearer(tenant.testKey)).expect(200);
    await request
      .get(api('/me'))
      .set('X-Forwarded-For', '10.9.0.3')
      .set(bearer(`svc_sk_live_${'Z'.repeat(40)}`))
      .expect(401);
  });
});
