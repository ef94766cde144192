import { mkdir } from 'node:fs/promises';

import S3rver from 's3rver';

export type EmbeddedS3Handle = { endpoint: string; stop(): Promise<void> };

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
  const address = await server.run();
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    stop: () => server.close(),
  };
}
