import { createHash } from 'node:crypto';
import { addAbortSignal, type Readable } from 'node:stream';

import { sniffHeadBytes } from '../../shared/media/contentSniff.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import type { UploadGauge } from './uploadGauge.ts';

// S3's smallest part (except the last). The minio client's own putObject buffers a stream of unknown
// length in parts of hundreds of MiB, i.e. a whole upload in memory; 5 MiB parts (two at a time:
// one being read, one being stored) bound it.
export const partSize = 5 * 1024 * 1024;

export type StreamOptions = {
  contentType: string;
  /** Past this many bytes nothing is stored: the rest of the stream is read and dropped. */
  maxBytes: number;
  /** Aborting destroys the stream, aborts the multipart upload and removes a finished object. */
  signal: AbortSignal;
  /** Counts the bytes held in memory. */
  gauge: UploadGauge;
  /** Stops the client's idle clock while a part is on its way to storage (our wait, not theirs). */
  holdIdle?: () => () => void;
  /**
   * Judges the content by its first `sniffHeadBytes` (or all of a shorter stream) before anything
   * is stored: false stores nothing, and the rest of the stream is read and dropped.
   */
  acceptsContent?: (head: Buffer) => Promise<boolean>;
};

/**
 * `sha256`: of the bytes stored (hex), what tells one upload from another (Idempotency-Key).
 * `refused`: acceptsContent turned the content down (`stored` is then false).
 */
export type StreamedObject = { sizeBytes: number; stored: boolean; sha256: string; refused?: boolean };

/**
 * Writes `stream` to `key` holding at most two 5 MiB parts in memory: small bodies go up in one PUT,
 * larger ones as a multipart upload. A stream longer than `maxBytes` stores nothing (`stored`
 * false) and is read to its end, so whatever follows it in the request can still be parsed.
 * @throws the stream's error, the storage client's error, or `signal.reason` once aborted; in every
 *   case the multipart upload has been aborted, no object is left and no byte is held any more.
 */
export async function streamToObjectStore(
  store: ObjectStore,
  key: string,
  stream: Readable,
  options: StreamOptions,
): Promise<StreamedObject> {
  const { signal, gauge } = options;
  let chunks: Buffer[] = [];
  let buffered = 0;
  let sizeBytes = 0;
  let tooLarge = false;
  let refused = false;
  let judged = options.acceptsContent === undefined;
  let uploadId: string | undefined;
  const parts: { partNumber: number; etag: string }[] = [];
  let partsStarted = 0;
  // The part on its way to storage while the next one is read from the client: at most two parts
  // in memory, and the socket and storage busy at once rather than in turn.
  let inFlight: Promise<void> | undefined;
  const dropBuffered = () => {
    gauge.hold(-buffered);
    chunks = [];
    buffered = 0;
  };
  const settleInFlight = async () => {
    const upload = inFlight;
    inFlight = undefined;
    if (upload) await upload;
  };
  const abortUpload = async () => {
    // A part still in flight is let land first: cancelling it could leave it written after the abort.
    await settleInFlight().catch(() => {});
    const id = uploadId;
    uploadId = undefined;
    // A failed abort leaves what a bucket's lifecycle rule for incomplete uploads removes; the
    // caller's own error is the one worth reporting.
    if (id) await store.abortMultipart(key, id).catch(() => {});
  };
  const uploadPart = async (part: number, body: Buffer) => {
    try {
      uploadId ??= await store.startMultipart(key, options.contentType);
      signal.throwIfAborted();
      const etag = await store.uploadPart(key, uploadId, part, body);
      parts.push({ partNumber: part, etag });
    } finally {
      // The part is stored or abandoned: either way its bytes are no longer ours to hold.
      gauge.hold(-body.length);
    }
  };
  // Part buffers are reused, two at most: a new 5 MiB buffer per part would leave garbage outside
  // V8's heap faster than its collector looks at it (RSS grew by tens of MiB per upload).
  const spare: Buffer[] = [];
  /** Sends the buffered bytes as the next part once the one before it has landed. */
  const flushPart = async () => {
    const target = spare.pop() ?? Buffer.allocUnsafe(partSize);
    const length = Math.min(buffered, partSize);
    let offset = 0;
    let used = 0;
    // What does not fit (the end of the last chunk copied) starts the next part.
    let overflow: Buffer[] = [];
    while (used < chunks.length && offset < length) {
      const chunk = chunks[used++]!;
      const copied = chunk.copy(target, offset, 0, Math.min(chunk.length, length - offset));
      offset += copied;
      if (copied < chunk.length) overflow = [chunk.subarray(copied)];
    }
    const body = target.subarray(0, length);
    const release = () => spare.push(target);
    chunks = [...overflow, ...chunks.slice(used)];
    buffered -= length;
    // While the previous part finishes the client is not read: our wait, not its silence.
    const releaseIdle = options.holdIdle?.();
    try {
      await settleInFlight();
    } catch (error) {
      gauge.hold(-body.length);
      throw error;
    } finally {
      releaseIdle?.();
    }
    const upload = uploadPart(++partsStarted, body).finally(release);
    // Observed by the next settleInFlight; until then its failure must not count as unhandled.
    upload.catch(() => {});
    inFlight = upload;
  };
  // An upload already in flight to storage is let finish (cancelling it could leave a part written
  // after the abort); the abort destroys the stream, which ends the loop below at its next read.
  addAbortSignal(signal, stream);
  // Leaving the loop early must not destroy the stream: its owner (the multipart parser) would
  // report that as the stream's own failure, hiding the storage error that caused it.
  const chunksOf = stream.iterator({ destroyOnReturn: false });
  const digest = createHash('sha256');
  // Judged once, on the first bytes, before the first write to storage (a part is 5 MiB).
  const judge = async () => {
    judged = true;
    refused = !(await options.acceptsContent!(Buffer.concat(chunks).subarray(0, sniffHeadBytes)));
    if (refused) dropBuffered();
  };
  try {
    for await (const chunk of chunksOf) {
      const buf = chunk as Buffer;
      sizeBytes += buf.length;
      if (tooLarge) continue;
      if (sizeBytes > options.maxBytes) {
        tooLarge = true;
        dropBuffered();
        await abortUpload();
        continue;
      }
      if (refused) continue;
      digest.update(buf);
      chunks.push(buf);
      buffered += buf.length;
      gauge.hold(buf.length);
      if (!judged && buffered >= sniffHeadBytes) await judge();
      while (buffered >= partSize) await flushPart();
    }
    // Too large wins over refused: the size limit is the client's first mistake to fix.
    if (tooLarge) return { sizeBytes, stored: false, sha256: '' };
    if (!judged && sizeBytes > 0) await judge();
    if (refused) return { sizeBytes, stored: false, sha256: '', refused: true };
    signal.throwIfAborted();
    if (partsStarted === 0) {
      const releaseIdle = options.holdIdle?.();
      try {
        await store.put(key, Buffer.concat(chunks), buffered, options.contentType);
      } finally {
        dropBuffered();
        releaseIdle?.();
      }
    } else {
      while (buffered > 0) await flushPart();
      const releaseIdle = options.holdIdle?.();
      try {
        await settleInFlight();
      } finally {
        releaseIdle?.();
      }
      await store.completeMultipart(key, uploadId!, parts);
      uploadId = undefined;
    }
    if (signal.aborted) {
      // Aborted while the last request was in flight: the object exists now and must not stay.
      await store.remove(key).catch(() => {});
      throw signal.reason;
    }
    return { sizeBytes, stored: true, sha256: digest.digest('hex') };
  } catch (error) {
    // Whatever is still coming is read and dropped, so the rest of the request can be parsed and
    // answered (a paused stream would hold the whole body, and the client, until it timed out).
    if (!stream.destroyed) stream.resume();
    await abortUpload();
    throw error;
  } finally {
    dropBuffered();
  }
}
