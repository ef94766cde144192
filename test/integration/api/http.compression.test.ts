import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import type { LoopbackServer } from '../../helpers/loopbackServer.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let server: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
  server = await t.listen();
});
afterAll(async () => {
  await server.close();
  await t.close();
});

/** The raw bytes of an answer and its headers, undecoded (node:http decodes nothing). */
async function raw(path: string, acceptEncoding = 'identity', headers: Record<string, string> = {}) {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http
      .get(`${server.origin}${path}`, { headers: { 'accept-encoding': acceptEncoding, ...headers } }, resolve)
      .on('error', reject);
  });
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode, body: Buffer.concat(chunks), headers: res.headers };
}

describe('compressed answers', () => {
  // The OpenAPI document is JSON far past the size compressed off the event loop (64 KiB).
  it('sends a large JSON answer as br or gzip when the client takes it, whole and equal, and plain otherwise', async () => {
    const plain = await raw(api('/openapi.json'));
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.body.length).toBeGreaterThan(64 * 1024);
    const br = await raw(api('/openapi.json'), 'br');
    expect(br.headers['content-encoding']).toBe('br');
    expect(br.headers.vary).toMatch(/Accept-Encoding/i);
    expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
    expect(br.body.length).toBeLessThan(plain.body.length / 4);
    const gzip = await raw(api('/openapi.json'), 'gzip');
    expect(gzip.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);
    // Each representation has its own validator, and each answers its own If-None-Match with 304.
    expect(gzip.headers.etag).not.toBe(plain.headers.etag);
    const again = await raw(api('/openapi.json'), 'gzip', { 'if-none-match': gzip.headers.etag! });
    expect(again.status).toBe(304);
  });

  it('leaves a small answer alone', async () => {
    const small = await raw(api('/me'), 'gzip, br', bearer(tenant.testKey));
    expect(small.body.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
  });
});
