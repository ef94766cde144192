import type { Readable } from 'node:stream';

import * as Minio from 'minio';

export type ObjectStoreConfig = {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
};

/**
 * The S3 API through the MinIO client: the same code path for the embedded s3rver, MinIO and AWS S3.
 */
export class ObjectStore {
  readonly client: Minio.Client;
  readonly bucket: string;

  constructor(config: ObjectStoreConfig) {
    const url = new URL(config.endpoint);
    this.client = new Minio.Client({
      endPoint: url.hostname,
      port: url.port ? Number(url.port) : undefined,
      useSSL: url.protocol === 'https:',
      accessKey: config.accessKey,
      secretKey: config.secretKey,
      region: config.region,
      pathStyle: true,
    });
    this.bucket = config.bucket;
  }

  /** Creates the bucket when missing (managed S3 deployments usually provision it beforehand). */
  async ensureBucket(): Promise<void> {
    if (!(await this.client.bucketExists(this.bucket))) await this.client.makeBucket(this.bucket);
  }

  async put(key: string, body: Buffer | Readable, size?: number, contentType?: string): Promise<void> {
    await this.client.putObject(
      this.bucket,
      key,
      body,
      size,
      contentType ? { 'Content-Type': contentType } : {},
    );
  }

  get(key: string, range?: { start: number; end: number }): Promise<Readable> {
    return range
      ? this.client.getPartialObject(this.bucket, key, range.start, range.end - range.start + 1)
      : this.client.getObject(this.bucket, key);
  }

  async getBuffer(key: string): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.get(key)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async stat(key: string): Promise<{ size: number; etag: string } | undefined> {
    try {
      const s = await this.client.statObject(this.bucket, key);
      return { size: s.size, etag: s.etag };
    } catch (error) {
      if (
        (error as { code?: string }).code === 'NotFound' ||
        (error as { code?: string }).code === 'NoSuchKey'
      ) {
        return undefined;
      }
      throw error;
    }
  }

  /** Keys under `prefix` last modified before `before`. */
  async *listOlderThan(prefix: string, before: Date): AsyncGenerator<string> {
    for await (const item of this.client.listObjectsV2(this.bucket, prefix, true)) {
      const entry = item as { name?: string; lastModified?: Date };
      if (entry.name && entry.lastModified && entry.lastModified < before) yield entry.name;
    }
  }

  async remove(key: string): Promise<void> {
    await this.client.removeObject(this.bucket, key);
  }
}
