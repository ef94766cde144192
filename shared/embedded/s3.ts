import { createHash, randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

import S3rver from 's3rver';
import authentication from 's3rver/lib/middleware/authentication.js';

import { multipartOperations, type MultipartStore } from './s3Multipart.ts';

export type EmbeddedS3Handle = { endpoint: string; stop(): Promise<void> };

/** An object as s3rver's router hands it to the store. */
type IncomingObject = {
  bucket: string;
  key: string;
  content: Buffer | NodeJS.ReadableStream;
  metadata: Record<string, string>;
};

/** The part of s3rver's filesystem store replaced or used below. */
type FilesystemStore = MultipartStore & {
  deleteObject(bucket: string, key: string): Promise<void>;
  putObject(object: IncomingObject): Promise<{ size: number; md5: string }>;
  putMetadata(bucket: string, key: string, metadata: Record<string, string>, md5: string): Promise<void>;
};

/** Writes `content` to `file`, returning its size and MD5, resolved only once the file is closed. */
async function writeCounted(
  file: string,
  content: IncomingObject['content'],
): Promise<{ size: number; md5: string }> {
  const md5 = createHash('md5');
  if (Buffer.isBuffer(content)) {
    await writeFile(file, content);
    return { size: content.length, md5: md5.update(content).digest('hex') };
  }
  let size = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      md5.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(content, counter, createWriteStream(file));
  return { size, md5: md5.digest('hex') };
}

/**
 * s3rver answers a PUT once it has handed the body to a write stream, not once the file is written:
 * a GET right after the answer could read an empty or cut object, and a write error had no handler.
 * Here the body goes to a file of its own beside the object's (its name never ends like an object's,
 * so listings skip it) and takes the object's place, whole, before the answer; a failed write leaves
 * the object as it was.
 */
function answerOnceWritten(store: FilesystemStore): void {
  store.putObject = async (object) => {
    const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
    await mkdir(path.dirname(objectPath), { recursive: true });
    const partial = `${objectPath}.${randomUUID()}.partial`;
    let written: { size: number; md5: string };
    try {
      written = await writeCounted(partial, object.content);
      await rename(partial, objectPath);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    await store.putMetadata(object.bucket, object.key, object.metadata, written.md5);
    return written;
  };
}

/**
 * s3rver removes a folder once its last object is deleted, which races an upload that has just
 * created that folder for its own file: the upload's write stream then fails with ENOENT and, having
 * no error handler, takes the whole process down. Keys here share a few fixed prefixes, so keeping
 * the folders costs nothing.
 */
function keepFoldersOnDelete(store: FilesystemStore): void {
  store.deleteObject = async (bucket, key) => {
    await Promise.all(
      ['object', 'object.md5', 'metadata.json'].map((resource) =>
        unlink(store.getResourcePath(bucket, key, resource)).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        }),
      ),
    );
  };
}

/**
 * Runs an in-process S3-compatible server on loopback with its objects under `directory`;
 * the application talks to it through the same MinIO client as to AWS S3. Multipart uploads can be
 * aborted and listed here as there (s3rver alone cannot: see s3Multipart.ts).
 */
export async function startEmbeddedS3(
  directory: string,
  bucket: string,
  port = 0,
): Promise<EmbeddedS3Handle> {
  // The objects are the workspaces' files: readable by this user alone, not by the system users the
  // worker runs other programs as (the deck renderer's Chromium). Also tightens a folder made before.
  await mkdir(directory, { recursive: true, mode: 0o700 });
  await chmod(directory, 0o700);
  const server = new S3rver({
    address: '127.0.0.1',
    port,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  const store = (server as unknown as { store: FilesystemStore }).store;
  keepFoldersOnDelete(store);
  answerOnceWritten(store);
  // s3rver's router is the last middleware; Koa composes the stack only when the server listens.
  server.middleware.splice(server.middleware.length - 1, 0, multipartOperations(store, authentication()));
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => server.close(),
  };
}
