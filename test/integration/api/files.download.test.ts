import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { binary } from '../../helpers/documents.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;
let fileId: string;
// Larger than one multipart part, so ranges cross the parts it was stored in.
const data = Buffer.alloc(6 * 1024 * 1024 + 123);
for (let i = 0; i < data.length; i++) data[i] = (i * 31 + (i >> 12)) & 0xff;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
  const res = await t.http
    .post(api('/files'))
    .set(bearer(tenant.liveKey))
    .attach('file', data, { filename: 'रिपोर्ट <v2>.bin', contentType: 'application/octet-stream' })
    .expect(201);
  fileId = res.body.file.id;
});
afterAll(() => t.close());

const get = (headers: Record<string, string> = {}, key = tenant.liveKey) =>
  t.http
    .get(api(`/files/${fileId}/content`))
    .set({ ...bearer(key), ...headers })
    .buffer(true)
    .parse(binary);

describe('GET /files/{fileId}/content', () => {
  it('streams the whole file as a download that is never sniffed or run', async () => {
    const res = await get().expect(200);
    expect((res.body as Buffer).equals(data)).toBe(true);
    expect(res.headers).toMatchObject({
      'content-type': 'application/octet-stream',
      'content-length': String(data.length),
      etag: `"${fileId}"`,
      'accept-ranges': 'bytes',
      'x-content-type-options': 'nosniff',
      'content-security-policy': 'sandbox',
    });
    expect(res.headers['content-disposition']).toBe(
      `attachment; filename="_______ <v2>.bin"; filename*=UTF-8''${encodeURIComponent('रिपोर्ट <v2>.bin')}`,
    );
  });

  it.each([
    ['first bytes', 'bytes=0-99', 0, 99],
    ['a middle slice across parts', 'bytes=5242000-5243999', 5_242_000, 5_243_999],
    ['an open-ended range', `bytes=${data.length - 10}-`, data.length - 10, data.length - 1],
    ['a suffix', 'bytes=-500', data.length - 500, data.length - 1],
    ['a range running past the end (clamped)', `bytes=${data.length - 5}-${data.length + 100}`, data.length - 5, data.length - 1],
  ])('answers %s with 206, byte-exact', async (_name, range, start, end) => {
    const res = await get({ Range: range }).expect(206);
    expect(res.headers['content-range']).toBe(`bytes ${start}-${end}/${data.length}`);
    expect(res.headers['content-length']).toBe(String(end - start + 1));
    expect((res.body as Buffer).equals(data.subarray(start, end + 1))).toBe(true);
  });

  it('answers an unsatisfiable range with 416, the envelope and the size', async () => {
    const res = await t.http
      .get(api(`/files/${fileId}/content`))
      .set({ ...bearer(tenant.liveKey), Range: `bytes=${data.length}-` })
      .expect(416);
    expect(res.headers['content-range']).toBe(`bytes */${data.length}`);
    expect(res.body.error.code).toBe('range_not_satisfiable');
  });

  it('answers 304 to If-None-Match with its ETag, and the whole file to several ranges', async () => {
    await get({ 'If-None-Match': `"${fileId}"` }).expect(304);
    const several = await get({ Range: 'bytes=0-1,5-6' }).expect(200);
    expect((several.body as Buffer).length).toBe(data.length);
  });

  it('is not_found for another workspace', async () => {
    const other = await createTenant(t.deps.pool);
    const res = await t.http.get(api(`/files/${fileId}/content`)).set(bearer(other.liveKey)).expect(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('refuses a presigned upload declared with a type that cannot be a header', async () => {
    const res = await t.http
      .post(api('/files/uploads'))
      .set(bearer(tenant.liveKey))
      .send({ filename: 'x.bin', mimeType: 'text/plain\r\nSet-Cookie: a=b', sizeBytes: 10 })
      .expect(422);
    expect(res.body.error.issues).toEqual([{ path: 'mimeType', message: 'must be a media type such as image/png' }]);
  });
});
