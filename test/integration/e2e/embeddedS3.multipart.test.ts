import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import type { EmbeddedS3Handle } from '../../../shared/embedded/s3.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import { startScratchS3 } from '../../helpers/scratchS3.ts';

const bucket = 'multipart';
const MiB = 1024 * 1024;

let s3: EmbeddedS3Handle;
let store: ObjectStore;

beforeAll(async () => {
  s3 = await startScratchS3('s3-multipart', bucket);
  store = new ObjectStore({
    endpoint: s3.endpoint,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    bucket,
    region: 'us-east-1',
  });
});
afterAll(async () => {
  await s3.stop();
});

type Part = { part: number; etag: string; size: number; lastModified: Date };
// ListParts is protected in the client's typings; it is the same signed request as every other call.
const listParts = (key: string, uploadId: string) =>
  (store.client as unknown as { listParts(b: string, k: string, id: string): Promise<Part[]> }).listParts(
    bucket,
    key,
    uploadId,
  );

async function startUpload(key: string, parts: Buffer[]): Promise<{ uploadId: string; etags: string[] }> {
  const uploadId = await store.client.initiateNewMultipartUpload(bucket, key, {});
  const etags: string[] = [];
  for (const [i, body] of parts.entries()) {
    const { etag } = await store.client.uploadPart(
      { bucketName: bucket, objectName: key, uploadID: uploadId, partNumber: i + 1, headers: {} },
      body,
    );
    etags.push(etag);
  }
  return { uploadId, etags };
}

async function incomplete(prefix = '', recursive = true) {
  const items: { key?: string; prefix?: string; uploadId?: string; size?: number }[] = [];
  for await (const item of store.client.listIncompleteUploads(bucket, prefix, recursive)) items.push(item);
  return items;
}

describe('embedded S3: the multipart operations s3rver lacks, through the minio client', () => {
  it('ListParts answers each stored part with its number, size and ETag', async () => {
    const { uploadId, etags } = await startUpload('parts/a', [Buffer.alloc(5 * MiB, 1), Buffer.from('tail')]);
    const parts = await listParts('parts/a', uploadId);
    expect(parts.map(({ part, etag, size }) => ({ part, etag, size }))).toEqual([
      { part: 1, etag: etags[0], size: 5 * MiB },
      { part: 2, etag: etags[1], size: 4 },
    ]);
    expect(parts[0]!.lastModified).toBeInstanceOf(Date);
    await store.client.abortMultipartUpload(bucket, 'parts/a', uploadId);
  });

  it('ListMultipartUploads lists uploads in key order, by prefix, folded by a delimiter, with sizes', async () => {
    const one = await startUpload('list/b/one', [Buffer.from('12345')]);
    const two = await startUpload('list/a/two', []);
    const other = await startUpload('elsewhere/x', []);
    expect(await incomplete('list/')).toEqual([
      expect.objectContaining({ key: 'list/a/two', uploadId: two.uploadId, size: 0 }),
      expect.objectContaining({ key: 'list/b/one', uploadId: one.uploadId, size: 5 }),
    ]);
    expect(await incomplete('list/', false)).toEqual([{ prefix: 'list/a/' }, { prefix: 'list/b/' }]);
    const page = await store.client.listIncompleteUploadsQuery(bucket, '', 'list/a/two', '', '');
    expect(page.uploads.map((u) => u.key)).toEqual(['list/b/one']);
    expect(page.uploads[0]!.initiated.getTime()).not.toBeNaN();
    // The client always asks for 1000; a smaller page shows the truncation markers S3 answers with.
    const res = await store.client.makeRequestAsync({
      method: 'GET',
      bucketName: bucket,
      query: 'uploads&max-uploads=1&prefix=list%2F',
    });
    let xml = '';
    for await (const chunk of res) xml += String(chunk);
    expect(xml).toContain('<IsTruncated>true</IsTruncated>');
    expect(xml).toContain('<NextKeyMarker>list/a/two</NextKeyMarker>');
    expect(xml).toContain(`<NextUploadIdMarker>${two.uploadId}</NextUploadIdMarker>`);
    expect(xml.match(/<Upload>/g)).toHaveLength(1);
    for (const [key, upload] of [
      ['list/b/one', one],
      ['list/a/two', two],
      ['elsewhere/x', other],
    ] as const) {
      await store.client.abortMultipartUpload(bucket, key, upload.uploadId);
    }
  });

  it('AbortMultipartUpload removes the upload and its parts; the id is then unknown everywhere', async () => {
    const { uploadId } = await startUpload('abort/me', [Buffer.alloc(5 * MiB, 2), Buffer.from('x')]);
    expect(await incomplete('abort/')).toHaveLength(1);
    await store.client.abortMultipartUpload(bucket, 'abort/me', uploadId);
    expect(await incomplete('abort/')).toEqual([]);
    const noSuchUpload = expect.objectContaining({ code: 'NoSuchUpload' });
    await expect(listParts('abort/me', uploadId)).rejects.toEqual(noSuchUpload);
    await expect(store.client.abortMultipartUpload(bucket, 'abort/me', uploadId)).rejects.toEqual(
      noSuchUpload,
    );
    await expect(
      store.client.uploadPart(
        { bucketName: bucket, objectName: 'abort/me', uploadID: uploadId, partNumber: 3, headers: {} },
        Buffer.from('late'),
      ),
    ).rejects.toEqual(noSuchUpload);
    await expect(
      store.client.completeMultipartUpload(bucket, 'abort/me', uploadId, [{ part: 1, etag: 'x' }]),
    ).rejects.toEqual(noSuchUpload);
    // A late part must not have brought the upload back, and nothing was stored under the key.
    expect(await incomplete('abort/')).toEqual([]);
    expect(await store.stat('abort/me')).toBeUndefined();
  });

  it('refuses an upload id of another key or outside the uploads folder', async () => {
    const { uploadId } = await startUpload('mine/key', []);
    const noSuchUpload = expect.objectContaining({ code: 'NoSuchUpload' });
    await expect(store.client.abortMultipartUpload(bucket, 'other/key', uploadId)).rejects.toEqual(
      noSuchUpload,
    );
    await expect(store.client.abortMultipartUpload(bucket, 'mine/key', '../../multipart')).rejects.toEqual(
      noSuchUpload,
    );
    expect(await incomplete('mine/')).toHaveLength(1);
    // minio's own clean-up: finds the upload by listing, then aborts it.
    await store.client.removeIncompleteUpload(bucket, 'mine/key');
    expect(await incomplete('mine/')).toEqual([]);
  });

  it('still completes an upload, which then leaves the listing', async () => {
    const first = Buffer.alloc(5 * MiB, 4);
    const { uploadId, etags } = await startUpload('done/object', [first, Buffer.from('end')]);
    await store.client.completeMultipartUpload(
      bucket,
      'done/object',
      uploadId,
      etags.map((etag, i) => ({ part: i + 1, etag })),
    );
    expect(await incomplete('done/')).toEqual([]);
    expect(await store.stat('done/object')).toMatchObject({ size: 5 * MiB + 3 });
    await store.remove('done/object');
  });
});
