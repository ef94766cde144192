import type { Readable } from 'node:stream';

import * as Minio from 'minio';

export type ObjectStoreConfig = {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /** Where callers outside this machine reach the same server: presigned URLs are signed for it. */
  publicEndpoint?: string;
};

/** A part of a multipart upload as the server lists it (ETag without its quotes). */
export type StoredPart = { partNumber: number; etag: string; size: number };

function clientFor(endpoint: string, config: ObjectStoreConfig): Minio.Client {
  const url = new URL(endpoint);
  return new Minio.Client({
    endPoint: url.hostname,
    port: url.port ? Number(url.port) : undefined,
    useSSL: url.protocol === 'https:',
    accessKey: config.accessKey,
    secretKey: config.secretKey,
    region: config.region,
    pathStyle: true,
  });
}

/** ETags travel quoted in headers and XML; compared bare. */
export function bareEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
}

/**
 * The S3 API through the MinIO client: the same code path for the embedded s3rver, MinIO and AWS S3.
 */
export class ObjectStore {
  readonly client: Minio.Client;
  readonly bucket: string;

  /** Signs URLs for the public endpoint; signing is local (the region is configured), no request. */
  readonly #presigner: Minio.Client;

  constructor(config: ObjectStoreConfig) {
    this.client = clientFor(config.endpoint, config);
    this.#presigner = config.publicEndpoint ? clientFor(config.publicEndpoint, config) : this.client;
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

  /** Starts a multipart upload to `key`; returns its upload id. */
  startMultipart(key: string, contentType: string): Promise<string> {
    return this.client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': contentType });
  }

  /** A URL a caller PUTs one part's bytes to, valid for `expiresInSeconds`. */
  presignPart(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string> {
    return this.#presigner.presignedUrl('PUT', this.bucket, key, expiresInSeconds, {
      partNumber: String(partNumber),
      uploadId,
    });
  }

  /** Every part uploaded so far, in part number order (the client pages through the listing). */
  async listParts(key: string, uploadId: string): Promise<StoredPart[]> {
    // Protected in the client's typings, public in its API (ListParts).
    const client = this.client as unknown as {
      listParts(
        bucket: string,
        key: string,
        uploadId: string,
      ): Promise<{ part: number; etag: string; size: number }[]>;
    };
    const parts = await client.listParts(this.bucket, key, uploadId);
    return parts.map((p) => ({ partNumber: p.part, etag: bareEtag(p.etag), size: p.size }));
  }

  async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]) {
    await this.client.completeMultipartUpload(
      this.bucket,
      key,
      uploadId,
      parts.map((p) => ({ part: p.partNumber, etag: p.etag })),
    );
  }

  /** Aborts a multipart upload, its parts deleted; one the server no longer knows counts as aborted. */
  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.abortMultipartUpload(this.bucket, key, uploadId);
    } catch (error) {
      if ((error as { code?: string }).code !== 'NoSuchUpload') throw error;
    }
  }

  async remove(key: string): Promise<void> {
    await this.client.removeObject(this.bucket, key);
  }
}
