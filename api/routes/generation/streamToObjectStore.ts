import type { Readable } from 'node:stream';

import type { ObjectStore } from '../../../shared/objectStore.ts';

// S3's smallest part (except the last). The minio client's own putObject buffers a stream of unknown
// length in parts of hundreds of MiB, i.e. a whole upload in memory; 5 MiB parts bound it.
const partSize = 5 * 1024 * 1024;

export type StreamedObject = { sizeBytes: number; truncated: boolean };

/**
 * Writes `stream` to `key` holding at most one 5 MiB part in memory: small bodies go up in one PUT,
 * larger ones as a multipart upload. `isTruncated` is asked once the stream ended (busboy marks a
 * file cut at its size limit): a truncated upload is aborted and nothing is stored.
 * @throws the storage client's error; the multipart upload is aborted first.
 */
export async function streamToObjectStore(
  store: ObjectStore,
  key: string,
  stream: Readable,
  contentType: string,
  isTruncated: () => boolean,
): Promise<StreamedObject> {
  const { client, bucket } = store;
  let chunks: Buffer[] = [];
  let buffered = 0;
  let sizeBytes = 0;
  let uploadId: string | undefined;
  const parts: { part: number; etag: string }[] = [];
  // Best effort: not every S3-compatible server implements the abort (s3rver does not), and
  // unfinished uploads are what the bucket's lifecycle rule for incomplete uploads removes.
  const abort = (id: string) => client.abortMultipartUpload(bucket, key, id).catch(() => {});
  const flushPart = async () => {
    uploadId ??= await client.initiateNewMultipartUpload(bucket, key, { 'Content-Type': contentType });
    const body = Buffer.concat(chunks);
    chunks = [];
    buffered = 0;
    const part = parts.length + 1;
    const { etag } = await client.uploadPart(
      {
        bucketName: bucket,
        objectName: key,
        uploadID: uploadId,
        partNumber: part,
        headers: { 'Content-Length': body.length },
      },
      body,
    );
    parts.push({ part, etag });
  };
  try {
    for await (const chunk of stream) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      buffered += buf.length;
      sizeBytes += buf.length;
      if (buffered >= partSize && !isTruncated()) await flushPart();
    }
    if (isTruncated()) {
      if (uploadId) await abort(uploadId);
      return { sizeBytes, truncated: true };
    }
    if (!uploadId) {
      await store.put(key, Buffer.concat(chunks), sizeBytes, contentType);
    } else {
      if (buffered > 0) await flushPart();
      await client.completeMultipartUpload(bucket, key, uploadId, parts);
    }
    return { sizeBytes, truncated: false };
  } catch (error) {
    if (uploadId) await abort(uploadId);
    throw error;
  }
}
