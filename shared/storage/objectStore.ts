import { PassThrough, type Readable } from 'node:stream';

import * as Minio from 'minio';

import { s3Transport } from './s3Transport.ts';
import {
  asStorageFailure,
  displayEndpoint,
  type StorageTarget,
  StorageUnavailableError,
} from './storageFailure.ts';

export type ObjectStoreConfig = {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  bucket: string;
  region: string;
  /** Where callers outside this machine reach the same server: presigned URLs are signed for it. */
  publicEndpoint?: string;
  /** How long a request may go without a byte moving before S3 answers (default 30 s). */
  answerTimeoutMs?: number;
};

/** A part of a multipart upload as the server lists it (ETag without its quotes). */
export type StoredPart = { partNumber: number; etag: string; size: number };

// Long enough for a server finishing a large CompleteMultipartUpload (AWS keeps such a connection
// busy with whitespace meanwhile); short enough that a call to a server that stopped answering
// fails while its caller still waits.
const defaultAnswerTimeoutMs = 30_000;

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
    transport: s3Transport(
      url.protocol === 'https:' ? 'https:' : 'http:',
      config.answerTimeoutMs ?? defaultAnswerTimeoutMs,
    ),
    // minio's own retry re-sends a stream body it has already consumed; callers retry instead (the api
    // answers 503 with Retry-After, a job runs again). The answers it would retry: see s3Transport.
    retryOptions: { disableRetry: true },
  });
}

/**
 * A query parameter value as S3 expects it (RFC 3986 unreserved characters kept). minio escapes the
 * upload id in ListParts and CompleteMultipartUpload but not in UploadPart or AbortMultipartUpload;
 * AWS's ids need no escaping, other servers' may.
 */
function queryValue(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

const codeOf = (error: unknown) => (error as { code?: unknown }).code;

/** ETags travel quoted in headers and XML; compared bare. */
export function bareEtag(etag: string): string {
  return etag
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
}

/**
 * The S3 API through the MinIO client: the same code path for the embedded s3rver, MinIO and AWS S3.
 * Every call goes through `#call`, so a failure that means storage is unavailable (unreachable,
 * 5xx, an answer the client cannot read, the bucket gone) leaves as a StorageUnavailableError naming
 * the bucket and endpoint; answers a caller handles itself (NoSuchKey, NoSuchUpload…) pass unchanged.
 */
export class ObjectStore {
  readonly client: Minio.Client;
  readonly bucket: string;
  /** What messages and logs name: the bucket, and the endpoint without credentials. */
  readonly target: StorageTarget;

  /** Signs URLs for the public endpoint; signing is local (the region is configured), no request. */
  readonly #presigner: Minio.Client;

  constructor(config: ObjectStoreConfig) {
    this.client = clientFor(config.endpoint, config);
    this.#presigner = config.publicEndpoint ? clientFor(config.publicEndpoint, config) : this.client;
    this.bucket = config.bucket;
    this.target = { bucket: config.bucket, endpoint: displayEndpoint(config.endpoint) };
  }

  async #call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      throw asStorageFailure(error, this.target);
    }
  }

  /**
   * Whether the bucket exists (HeadBucket). S3 answers 404 for a missing bucket and 403 both for one
   * of another account and for credentials without s3:ListBucket: the 403 is thrown.
   * @throws StorageUnavailableError when S3 cannot be reached, refuses the credentials or answers 5xx.
   */
  bucketExists(): Promise<boolean> {
    return this.#call(() => this.client.bucketExists(this.bucket));
  }

  /**
   * Creates the bucket (CreateBucket, in the configured region). One that exists already and is ours
   * counts as created: AWS answers BucketAlreadyOwnedByYou outside us-east-1 (200 inside it), which is
   * also what a second release racing this one meets.
   * @throws StorageUnavailableError (AccessDenied among its causes when the credentials may not create
   *   buckets); S3Error BucketAlreadyExists when another account owns the name.
   */
  async createBucket(): Promise<void> {
    await this.#call(async () => {
      try {
        await this.client.makeBucket(this.bucket);
      } catch (error) {
        if (codeOf(error) !== 'BucketAlreadyOwnedByYou') throw error;
      }
    });
  }

  /** Creates the bucket when missing; true when it had to. See bucketExists and createBucket. */
  async ensureBucket(): Promise<boolean> {
    if (await this.bucketExists()) return false;
    await this.createBucket();
    return true;
  }

  async put(key: string, body: Buffer | Readable, size?: number, contentType?: string): Promise<void> {
    await this.#call(() =>
      this.client.putObject(this.bucket, key, body, size, contentType ? { 'Content-Type': contentType } : {}),
    );
  }

  /**
   * The object's bytes (a byte range of them, ends inclusive), streamed. A failure while the bytes
   * flow is a StorageUnavailableError too; destroying the stream stops the read from S3.
   */
  async get(key: string, range?: { start: number; end: number }): Promise<Readable> {
    const source = await this.#call(() =>
      range
        ? this.client.getPartialObject(this.bucket, key, range.start, range.end - range.start + 1)
        : this.client.getObject(this.bucket, key),
    );
    const out = new PassThrough();
    source.on('error', (error) => out.destroy(asStorageFailure(error, this.target) as Error));
    // A consumer that stops early (a client that left) stops the read from S3 too.
    out.on('close', () => {
      if (!source.readableEnded) source.destroy();
    });
    return source.pipe(out);
  }

  async getBuffer(key: string, range?: { start: number; end: number }): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of await this.get(key, range)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  /** The object's size and ETag (HeadObject); undefined when there is no such object. */
  async stat(key: string): Promise<{ size: number; etag: string } | undefined> {
    try {
      const s = await this.#call(() => this.client.statObject(this.bucket, key));
      return { size: s.size, etag: s.etag };
    } catch (error) {
      // HeadObject has no body: a missing key is a bare 404, which minio names NotFound.
      if (codeOf(error) === 'NotFound' || codeOf(error) === 'NoSuchKey') return undefined;
      throw error;
    }
  }

  /** Keys under `prefix` last modified before `before` (ListObjectsV2, paged by the client). */
  async *listOlderThan(prefix: string, before: Date): AsyncGenerator<string> {
    try {
      for await (const item of this.client.listObjectsV2(this.bucket, prefix, true)) {
        const entry = item as { name?: string; lastModified?: Date };
        if (entry.name && entry.lastModified && entry.lastModified < before) yield entry.name;
      }
    } catch (error) {
      throw asStorageFailure(error, this.target);
    }
  }

  /** Starts a multipart upload to `key` (CreateMultipartUpload); returns its upload id. */
  startMultipart(key: string, contentType: string): Promise<string> {
    return this.#call(() =>
      this.client.initiateNewMultipartUpload(this.bucket, key, { 'Content-Type': contentType }),
    );
  }

  /** Stores one part (UploadPart); returns its ETag. */
  async uploadPart(key: string, uploadId: string, partNumber: number, body: Buffer): Promise<string> {
    const { etag } = await this.#call(() =>
      this.client.uploadPart(
        {
          bucketName: this.bucket,
          objectName: key,
          uploadID: queryValue(uploadId),
          partNumber,
          headers: { 'Content-Length': body.length },
        },
        body,
      ),
    );
    return etag;
  }

  /** A URL a caller PUTs one part's bytes to, valid for `expiresInSeconds`. */
  presignPart(key: string, uploadId: string, partNumber: number, expiresInSeconds: number): Promise<string> {
    return this.#call(() =>
      this.#presigner.presignedUrl('PUT', this.bucket, key, expiresInSeconds, {
        partNumber: String(partNumber),
        uploadId,
      }),
    );
  }

  /**
   * Every part uploaded so far, in part number order (ListParts, paged by NextPartNumberMarker). A
   * truncated page whose marker does not move on is an answer the client cannot read, not a reason
   * to ask again forever.
   */
  async listParts(key: string, uploadId: string): Promise<StoredPart[]> {
    // Private in the client's typings, public in its API (one ListParts page).
    const client = this.client as unknown as {
      listPartsQuery(
        bucket: string,
        key: string,
        uploadId: string,
        marker: number,
      ): Promise<{
        isTruncated: boolean;
        marker: number;
        parts: { part: number; etag: string; size: number }[];
      }>;
    };
    const parts: StoredPart[] = [];
    let marker = 0;
    for (;;) {
      const page = await this.#call(() => client.listPartsQuery(this.bucket, key, uploadId, marker));
      parts.push(...page.parts.map((p) => ({ partNumber: p.part, etag: bareEtag(p.etag), size: p.size })));
      if (!page.isTruncated) return parts;
      const next = Number(page.marker);
      if (!Number.isSafeInteger(next) || next <= marker) {
        throw new StorageUnavailableError(
          `S3 answered ListParts for bucket '${this.bucket}' at ${this.target.endpoint} truncated without a NextPartNumberMarker past ${marker}`,
          this.target,
          undefined,
        );
      }
      marker = next;
    }
  }

  /**
   * Assembles the parts (CompleteMultipartUpload), in ascending part number order as S3 requires.
   * An error S3 sends inside its 200 answer is thrown like any other.
   */
  async completeMultipart(key: string, uploadId: string, parts: { partNumber: number; etag: string }[]) {
    const ordered = [...parts].sort((a, b) => a.partNumber - b.partNumber);
    await this.#call(async () => {
      try {
        await this.client.completeMultipartUpload(
          this.bucket,
          key,
          uploadId,
          ordered.map((p) => ({ part: p.partNumber, etag: p.etag })),
        );
      } catch (error) {
        // minio reads an answer without <CompleteMultipartUploadResult> (a proxy's page in a 200) by
        // dereferencing what is not there. Its arguments are typed here, so a TypeError is the answer's.
        if (!(error instanceof TypeError)) throw error;
        throw new StorageUnavailableError(
          `S3 answered CompleteMultipartUpload for bucket '${this.bucket}' at ${this.target.endpoint} with a document the client could not read`,
          this.target,
          error,
        );
      }
    });
  }

  /** Aborts a multipart upload, its parts deleted; one the server no longer knows counts as aborted. */
  async abortMultipart(key: string, uploadId: string): Promise<void> {
    try {
      await this.#call(() => this.client.abortMultipartUpload(this.bucket, key, queryValue(uploadId)));
    } catch (error) {
      if (codeOf(error) !== 'NoSuchUpload') throw error;
    }
  }

  /** Deletes the object (DeleteObject); a missing key is no error in S3. */
  async remove(key: string): Promise<void> {
    await this.#call(() => this.client.removeObject(this.bucket, key));
  }
}
