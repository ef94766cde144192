import { mkdir, unlink } from 'node:fs/promises';

import S3rver from 's3rver';

export type EmbeddedS3Handle = { endpoint: string; stop(): Promise<void> };

/** The part of s3rver's filesystem store replaced below. */
type FilesystemStore = {
  getResourcePath(bucket: string, key: string, resource: string): string;
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
 * the application talks to it through the same MinIO client as to AWS S3.
 */
export async function startEmbeddedS3(
  directory: string,
  bucket: string,
  port = 0,
): Promise<EmbeddedS3Handle> {
  await mkdir(directory, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port,
    directory,
    silent: true,
    configureBuckets: [{ name: bucket, configs: [] }],
  });
  keepFoldersOnDelete((server as unknown as { store: FilesystemStore }).store);
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => server.close(),
  };
}
