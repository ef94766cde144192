import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { sweepExpiredUploads } from '../../../worker/tasks/uploads__sweep.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type S3Proxy, startS3Proxy } from '../../helpers/s3Proxy.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';
import { uploadedFile } from '../../helpers/uploadedFile.ts';

const MiB = 1024 * 1024;
const bucket = 'svc-presigned';

let s3: EmbeddedS3Handle;
let proxy: S3Proxy;
let store: ObjectStore;
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  s3 = await startScratchS3('presigned', bucket);
  proxy = await startS3Proxy(s3.endpoint);
  t = await setupTestContext({
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: bucket,
    S3_PUBLIC_ENDPOINT: proxy.endpoint,
  });
  store = new ObjectStore(t.s3);
  tenant = await createTenant(t.deps.pool);
});
afterAll(async () => {
  await t.close();
  await proxy.close();
  await s3.stop();
});

type Session = {
  sessionId: string;
  partSize: number;
  partCount: number;
  parts: { partNumber: number; url: string }[];
  expiresInSeconds: number;
};

function patterned(bytes: number, seed = 1): Buffer {
  const data = Buffer.alloc(bytes);
  for (let i = 0; i + 4 <= bytes; i += 4096) data.writeUInt32LE((i * seed) >>> 0, i);
  return data;
}

async function start(body: Record<string, unknown>, key = tenant.liveKey) {
  return postAs(t.http, key, '/files/uploads').send(body);
}

async function startSession(data: Buffer, mimeType = 'application/octet-stream', key = tenant.liveKey) {
  const res = await start({ filename: 'upload.bin', mimeType, sizeBytes: data.length }, key);
  expect(res.status).toBe(201);
  return res.body.upload as Session;
}

/** PUTs each part's bytes to its presigned URL, as a client would; returns the ETags S3 answered. */
async function putParts(session: Session, data: Buffer, only?: number[]) {
  const etags: { partNumber: number; etag: string }[] = [];
  for (const part of session.parts) {
    if (only && !only.includes(part.partNumber)) continue;
    const from = (part.partNumber - 1) * session.partSize;
    const res = await fetch(part.url, { method: 'PUT', body: data.subarray(from, from + session.partSize) });
    expect(res.status).toBe(200);
    etags.push({ partNumber: part.partNumber, etag: res.headers.get('etag')! });
  }
  return etags;
}

const complete = (sessionId: string, parts: unknown, key = tenant.liveKey) =>
  postAs(t.http, key, `/files/uploads/${sessionId}/complete`).send({ parts });

const holdsOf = (workspaceId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from storage_reservations where workspace_id = ${workspaceId}
  `);

async function incompleteUploads(): Promise<string[]> {
  const result = await store.client.listIncompleteUploadsQuery(bucket, '', '', '', '');
  return result.uploads.map((u) => u.key);
}

describe('presigned multipart uploads', () => {
  it('gives one presigned PUT URL per part on the public endpoint, and assembles the parts into the file', async () => {
    const data = patterned(17 * MiB + 5);
    const session = await startSession(data);
    expect(session).toEqual({
      sessionId: expect.stringMatching(/^upl_/),
      partSize: 8 * MiB,
      partCount: 3,
      parts: [1, 2, 3].map((partNumber) => ({ partNumber, url: expect.stringContaining(proxy.endpoint) })),
      expiresInSeconds: 3600,
    });
    const before = proxy.requests;
    const etags = await putParts(session, data);
    expect(proxy.requests - before).toBe(3);
    const res = await complete(session.sessionId, etags).expect(201);
    expect(res.body.file).toEqual(uploadedFile('upload.bin', 'application/octet-stream', data.length));
    const key = await t.deps.pool.oneFirst(sql.type(z.object({ storage_key: z.string() }))`
      select storage_key from files where id = ${res.body.file.id}
    `);
    expect((await store.getBuffer(key)).equals(data)).toBe(true);
    expect(await holdsOf(tenant.workspaceId)).toBe(0);
    // A completed session is gone for good.
    expect((await complete(session.sessionId, etags)).status).toBe(404);
  }, 30_000);

  it('takes the parts in any order', async () => {
    const data = patterned(9 * MiB, 3);
    const session = await startSession(data);
    const etags = await putParts(session, data);
    const res = await complete(session.sessionId, [...etags].reverse()).expect(201);
    expect(res.body.file.sizeBytes).toBe(data.length);
  });

  it('refuses a wrong ETag, a missing part and a part never uploaded, and completes once they are right', async () => {
    const data = patterned(17 * MiB, 5);
    const session = await startSession(data);
    const etags = await putParts(session, data, [1, 2]);
    const wrong = await complete(session.sessionId, [
      { ...etags[0]!, etag: '"0123456789abcdef0123456789abcdef"' },
      etags[1],
    ]);
    expect(wrong.status).toBe(422);
    expect(wrong.body.error.issues).toContainEqual({
      path: 'parts/0/etag',
      message: 'is not the ETag S3 returned for part 1',
    });
    const missing = await complete(session.sessionId, etags);
    expect(missing.status).toBe(422);
    expect(missing.body.error.issues).toContainEqual({ path: 'parts', message: 'must name part(s) 3' });
    const notUploaded = await complete(session.sessionId, [
      ...etags,
      { partNumber: 3, etag: etags[0]!.etag },
    ]);
    expect(notUploaded.body.error.issues).toContainEqual({
      path: 'parts/2',
      message: 'part 3 was not uploaded',
    });
    const twice = await complete(session.sessionId, [etags[0], etags[0], etags[1]]);
    expect(twice.body.error.issues).toContainEqual({
      path: 'parts/1/partNumber',
      message: 'part 1 is named twice',
    });
    const all = [...etags, ...(await putParts(session, data, [3]))];
    await complete(session.sessionId, all).expect(201);
  }, 30_000);

  it('refuses parts whose sizes do not add up to sizeBytes', async () => {
    const data = patterned(6 * MiB);
    const session = await startSession(data);
    const res = await fetch(session.parts[0]!.url, { method: 'PUT', body: data.subarray(0, 5 * MiB) });
    const answer = await complete(session.sessionId, [{ partNumber: 1, etag: res.headers.get('etag') }]);
    expect(answer.status).toBe(422);
    expect(answer.body.error.issues).toContainEqual({
      path: 'parts/0',
      message: `part 1 holds ${5 * MiB} bytes; it must hold ${6 * MiB}`,
    });
  });

  it('makes one file of two concurrent completes', async () => {
    const data = patterned(9 * MiB, 7);
    const session = await startSession(data);
    const etags = await putParts(session, data);
    const results = await Promise.all([
      complete(session.sessionId, etags),
      complete(session.sessionId, etags),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 404]);
    const files = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from upload_sessions s join files f on f.id = s.file_id where s.id = ${session.sessionId}
    `);
    expect(files).toBe(1);
  }, 30_000);

  it('answers not_found for an expired session and for another workspace', async () => {
    const data = patterned(1 * MiB);
    const session = await startSession(data);
    const etags = await putParts(session, data);
    const other = await createTenant(t.deps.pool);
    expect((await complete(session.sessionId, etags, other.liveKey)).status).toBe(404);
    await t.deps.pool.query(sql.typeAlias('void')`
      update upload_sessions set expires_at = now() - interval '1 second' where id = ${session.sessionId}
    `);
    const res = await complete(session.sessionId, etags);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  });

  it('refuses an assembled file whose content is not its declared type, keeping nothing', async () => {
    const other = await createTenant(t.deps.pool);
    const elf = readFileSync(process.execPath).subarray(0, 2 * MiB);
    const session = await startSession(elf, 'image/png', other.liveKey);
    const etags = await putParts(session, elf);
    const res = await complete(session.sessionId, etags, other.liveKey);
    expect(res.status).toBe(422);
    expect(res.body.error.issues).toEqual([
      { path: 'parts', message: 'the assembled file is not image/png' },
    ]);
    expect(await holdsOf(other.workspaceId)).toBe(0);
    const names: string[] = [];
    for await (const item of store.client.listObjectsV2(bucket, `files/${other.workspaceId}/`, true)) {
      names.push((item as { name: string }).name);
    }
    expect(names).toEqual([]);
  });

  it('holds the whole size against the quota: concurrent sessions never pass it', async () => {
    const small = await createTenant(t.deps.pool);
    await t.deps.pool.query(sql.typeAlias('void')`
      update workspaces set storage_quota_bytes = ${100 * MiB} where id = ${small.workspaceId}
    `);
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        start(
          { filename: 'x.bin', mimeType: 'application/octet-stream', sizeBytes: 30 * MiB },
          small.liveKey,
        ),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 201, 507, 507, 507, 507, 507]);
    expect(results.find((r) => r.status === 507)!.body.error.code).toBe('storage_quota_exceeded');
  });

  it('refuses executables and sizes past 5 TiB before starting anything', async () => {
    const exe = await start({ filename: 'a.exe', mimeType: 'application/x-msdownload', sizeBytes: 10 });
    expect(exe.status).toBe(415);
    const huge = await start({
      filename: 'a.bin',
      mimeType: 'application/octet-stream',
      sizeBytes: 6 * 1024 ** 4,
    });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('file_too_large');
  });

  it('aborts expired sessions in S3 and gives their holds back (the sweeper)', async () => {
    const other = await createTenant(t.deps.pool);
    const data = patterned(9 * MiB);
    const session = await startSession(data, 'application/octet-stream', other.liveKey);
    await putParts(session, data, [1]);
    const key = await t.deps.pool.oneFirst(sql.type(z.object({ storage_key: z.string() }))`
      select storage_key from upload_sessions where id = ${session.sessionId}
    `);
    expect(await incompleteUploads()).toContain(key);
    // Sessions of earlier tests may have expired; this one has not, and stays.
    await sweepExpiredUploads({ pool: t.deps.pool, objectStore: store, logger: t.deps.logger });
    expect(await incompleteUploads()).toContain(key);
    await t.deps.pool.query(sql.typeAlias('void')`
      update upload_sessions set expires_at = now() - interval '1 second' where id = ${session.sessionId}
    `);
    expect(await sweepExpiredUploads({ pool: t.deps.pool, objectStore: store, logger: t.deps.logger })).toBe(
      1,
    );
    expect(await incompleteUploads()).not.toContain(key);
    expect(await holdsOf(other.workspaceId)).toBe(0);
    const status = await t.deps.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
      select status from upload_sessions where id = ${session.sessionId}
    `);
    expect(status).toBe('aborted');
  });
});
