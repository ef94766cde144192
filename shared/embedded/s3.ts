import { chmod, mkdir, unlink } from 'node:fs/promises';

import S3rver from 's3rver';
import authentication from 's3rver/lib/middleware/authentication.js';

import { multipartOperations, type MultipartStore } from './s3Multipart.ts';

export type EmbeddedS3Handle = { endpoint: string; stop(): Promise<void> };

/** The part of s3rver's filesystem store replaced below. */
type FilesystemStore = MultipartStore & {
  deleteObject(bucket: string, key: string): Promise<void>;
};

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
  // s3rver's router is the last middleware; Koa composes the stack only when the server listens.
  server.middleware.splice(server.middleware.length - 1, 0, multipartOperations(store, authentication()));
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => server.close(),
  };
}
