import { readFileSync } from 'node:fs';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { makeApp } from '../../../api/app.ts';
import { sql } from '../../../shared/db/sql.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { makeWav } from '../../helpers/audio.ts';
import { api, bearer, postAs, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { multipartBody, sendPartially } from '../../helpers/rawHttp.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { uploadedFile } from '../../helpers/uploadedFile.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
// A real executable: what an attacker would try to store under an innocent label.
const elf = readFileSync(process.execPath).subarray(0, 64 * KiB);
const png = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a48b0000000049454e44ae426082',
  'hex',
);

let t: TestContext;
let tenant: Tenant;
let store: ObjectStore;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant());
  store = new ObjectStore(t.s3);
});
afterAll(() => t.close());

const storage = z.object({ used: z.number(), quota: z.number(), holds: z.number() });

function storageOf(workspaceId: string) {
  return t.deps.pool.one(sql.type(storage)`
    select storage_used_bytes as used, storage_quota_bytes as quota,
           (select count(*) from storage_reservations r where r.workspace_id = w.id)::int as holds
    from workspaces w where id = ${workspaceId}
  `);
}

async function objectsOf(workspaceId: string): Promise<string[]> {
  const names: string[] = [];
  for await (const item of store.client.listObjectsV2(store.bucket, `files/${workspaceId}/`, true)) {
    names.push((item as { name: string }).name);
  }
  return names;
}

/** Another workspace, whose storage quota is `bytes`. */
async function tenantWithQuota(bytes: number): Promise<Tenant> {
  const small = await createTenant(t.deps.pool);
  await t.deps.pool.query(sql.typeAlias('void')`
    update workspaces set storage_quota_bytes = ${bytes} where id = ${small.workspaceId}
  `);
  return small;
}

/** A multipart body whose one part, `file`, holds `data` as application/octet-stream. */
const binaryFileBody = (filename: string, data: Buffer) =>
  multipartBody([{ name: 'file', filename, contentType: 'application/octet-stream', data }]);

const upload = (data: Buffer, filename: string, contentType: string, key = tenant.liveKey) =>
  postAs(t.http, key, '/files').attach('file', data, { filename, contentType });

describe('POST /files', () => {
  it('stores the bytes in the drive of the key creator and counts them against the quota', async () => {
    const before = await storageOf(tenant.workspaceId);
    const data = Buffer.from('quarterly numbers,1,2,3\n'.repeat(1000));
    const res = await upload(data, 'numbers.txt', 'text/plain').expect(201);
    expect(res.body.file).toEqual(uploadedFile('numbers.txt', 'text/plain', data.length));
    const read = await t.http
      .get(api(`/files/${res.body.file.id}`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(read.body).toEqual({ file: res.body.file });
    const row = await t.deps.pool.one(sql.type(z.object({ member_id: z.string(), storage_key: z.string() }))`
      select member_id, storage_key from files where id = ${res.body.file.id}
    `);
    expect(row.member_id).toBe(tenant.memberId);
    expect((await store.getBuffer(row.storage_key)).equals(data)).toBe(true);
    expect(await storageOf(tenant.workspaceId)).toEqual({ ...before, used: before.used + data.length });
  });

  it('streams a file larger than one part (multipart to storage) byte-exact', async () => {
    const data = Buffer.alloc(12 * MiB + 7);
    for (let i = 0; i < data.length; i += 4096) data.writeUInt32LE(i, i);
    const res = await upload(data, 'big.bin', 'application/octet-stream').expect(201);
    expect(res.body.file.sizeBytes).toBe(data.length);
    const row = await t.deps.pool.oneFirst(sql.type(z.object({ storage_key: z.string() }))`
      select storage_key from files where id = ${res.body.file.id}
    `);
    expect((await store.getBuffer(row)).equals(data)).toBe(true);
  }, 30_000);

  it.each([
    ['image/png', 'photo.png'],
    ['audio/wav', 'voice.wav'],
    ['application/pdf', 'report.pdf'],
    ['application/octet-stream', 'tool.bin'],
  ])('refuses an executable declared as %s, storing and holding nothing', async (contentType, filename) => {
    const other = await createTenant(t.deps.pool);
    const res = await upload(elf, filename, contentType, other.liveKey).expect(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    expect(await objectsOf(other.workspaceId)).toEqual([]);
    expect(await storageOf(other.workspaceId)).toMatchObject({ used: 0, holds: 0 });
  });

  it('refuses content that does not show its declared type, and executable types outright', async () => {
    const statuses = [
      (await upload(Buffer.from('just text'), 'fake.png', 'image/png')).status,
      (await upload(png, 'image.txt', 'text/plain')).status,
      (await upload(Buffer.from('#!/bin/sh'), 'x', 'application/x-msdownload')).status,
      (await upload(png, 'dot.png', 'image/png')).status,
      (await upload(makeWav(0.1), 'a.wav', 'audio/wav')).status,
    ];
    expect(statuses).toEqual([415, 415, 415, 201, 201]);
  });

  it('answers invalid_request_body without a file or outside multipart/form-data', async () => {
    const none = await postAs(t.http, tenant.liveKey, '/files').field('note', 'no file here').expect(422);
    expect(none.body.error.issues).toEqual(
      expect.arrayContaining([
        { path: 'note', message: 'unknown field' },
        { path: 'file', message: 'is required' },
      ]),
    );
    const json = await postAs(t.http, tenant.liveKey, '/files').send({ file: 'x' }).expect(422);
    expect(json.body.error.code).toBe('invalid_request_body');
  });

  it('refuses a file over 100 MiB with file_too_large and keeps nothing of it', async () => {
    const other = await createTenant(t.deps.pool);
    const res = await upload(
      Buffer.alloc(100 * MiB + 1),
      'huge.bin',
      'application/octet-stream',
      other.liveKey,
    );
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('file_too_large');
    expect(await objectsOf(other.workspaceId)).toEqual([]);
    expect(await storageOf(other.workspaceId)).toMatchObject({ used: 0, holds: 0 });
  }, 60_000);

  it('never lets concurrent uploads pass a small quota together', async () => {
    const small = await tenantWithQuota(1 * MiB);
    const data = Buffer.alloc(300 * KiB, 1);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        upload(data, `part-${i}.bin`, 'application/octet-stream', small.liveKey),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    const stored = statuses.filter((s) => s === 201).length;
    expect(stored).toBeGreaterThanOrEqual(1);
    expect(stored).toBeLessThanOrEqual(3);
    for (const r of results.filter((r) => r.status !== 201)) {
      expect(r.status).toBe(507);
      expect(r.body.error.code).toBe('storage_quota_exceeded');
    }
    const after = await storageOf(small.workspaceId);
    expect(after).toEqual({ used: stored * data.length, quota: MiB, holds: 0 });
    expect(after.used).toBeLessThanOrEqual(after.quota);
    expect(await objectsOf(small.workspaceId)).toHaveLength(stored);
  }, 30_000);

  it('refuses a body of unknown length that outgrows what the quota has left', async () => {
    const small = await tenantWithQuota(64 * KiB);
    const server = await listenOnLoopback(makeApp(t.deps));
    try {
      const { body, contentType } = binaryFileBody('chunked.bin', Buffer.alloc(100 * KiB));
      // No Content-Length: the hold is what the quota has left, and the file runs past it.
      const res = await fetch(`${server.origin}${api('/files')}`, {
        method: 'POST',
        headers: { ...bearer(small.liveKey), 'Content-Type': contentType },
        body: new Blob([body]).stream(),
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(507);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('storage_quota_exceeded');
      expect(await storageOf(small.workspaceId)).toMatchObject({ used: 0, holds: 0 });
    } finally {
      await server.close();
    }
  });

  it('gives the hold back and keeps nothing when the client goes away mid-upload', async () => {
    const other = await createTenant(t.deps.pool);
    const server = await listenOnLoopback(makeApp(t.deps));
    try {
      const { body, contentType } = binaryFileBody('cut.bin', Buffer.alloc(8 * MiB, 3));
      const client = sendPartially(server.origin, {
        path: api('/files'),
        headers: { ...bearer(other.liveKey), 'Content-Type': contentType },
        body,
        sendBytes: 6 * MiB,
      });
      await client.sent;
      await until(async () => (await storageOf(other.workspaceId)).holds === 1);
      client.socket.destroy();
      await until(async () => (await storageOf(other.workspaceId)).holds === 0);
      expect(await storageOf(other.workspaceId)).toMatchObject({ used: 0 });
      await until(async () => (await objectsOf(other.workspaceId)).length === 0);
      await until(async () => t.deps.uploads.receiving === 0);
    } finally {
      await server.close();
    }
  }, 30_000);

  it('replays an Idempotency-Key with the same bytes, storing and counting the file once', async () => {
    const other = await createTenant(t.deps.pool);
    const send = (data: Buffer) =>
      postAs(t.http, other.liveKey, '/files')
        .set('Idempotency-Key', 'upload-once')
        .attach('file', data, { filename: 'once.txt', contentType: 'text/plain' });
    const data = Buffer.from('the same bytes twice');
    const [first, second] = await Promise.all([send(data), send(data)]);
    const answers = [first, second].sort((a, b) => a.status - b.status);
    // Sent together: one makes the file, the other replays it (or is told the first is still running).
    expect(answers[0]!.status).toBe(201);
    const third = await send(data).expect(201);
    expect(third.headers['idempotent-replayed']).toBe('true');
    expect(third.body.file.id).toBe(answers[0]!.body.file.id);
    const reused = await send(Buffer.from('other bytes'));
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe('idempotency_key_reused');
    expect(await objectsOf(other.workspaceId)).toHaveLength(1);
    expect(await storageOf(other.workspaceId)).toMatchObject({ used: data.length, holds: 0 });
  });

  it('answers not_found for a file of another workspace', async () => {
    const mine = await upload(Buffer.from('mine'), 'mine.txt', 'text/plain').expect(201);
    const other = await createTenant(t.deps.pool);
    const res = await t.http
      .get(api(`/files/${mine.body.file.id}`))
      .set(bearer(other.liveKey))
      .expect(404);
    expect(res.body.error.code).toBe('not_found');
  });
});

/** Polls until `predicate` holds: waiting for something to happen, never to prove it did not. */
async function until(predicate: () => Promise<boolean>): Promise<void> {
  while (!(await predicate())) await new Promise((r) => setTimeout(r, 20));
}
