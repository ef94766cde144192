import { readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';

import type { KoaContext, KoaMiddleware } from 's3rver';
import account from 's3rver/lib/models/account.js';
import S3Error from 's3rver/lib/models/error.js';

/** The parts of s3rver's filesystem store these operations read. */
export type MultipartStore = {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  getBucket(bucket: string): Promise<unknown>;
};

const { DUMMY_ACCOUNT } = account;
const xmlns = 'http://s3.amazonaws.com/doc/2006-03-01/';
// S3's own page size for both listings; callers may ask for less, never more.
const maxListing = 1000;
// s3rver makes upload ids of 32 hex digits and joins them into paths unchecked: anything else would
// be a path outside the uploads folder.
const safeUploadId = /^[A-Za-z0-9_-]{1,128}$/;

type Upload = { key: string; uploadId: string; initiated: Date; dir: string };

/** `/bucket/some/key` → bucket and decoded key (path-style addressing, as our client uses). */
function parsePath(requestPath: string): { bucket: string; key: string | undefined } | undefined {
  const match = /^\/([^/]+)(?:\/(.+))?$/.exec(requestPath);
  if (!match) return undefined;
  try {
    return {
      bucket: decodeURIComponent(match[1]!),
      key: match[2] === undefined ? undefined : decodeURIComponent(match[2]),
    };
  } catch {
    return undefined;
  }
}

function noSuchUpload(uploadId: string): Error {
  return new S3Error(
    'NoSuchUpload',
    'The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.',
    { UploadId: uploadId },
  );
}

function uploadsDir(store: MultipartStore, bucket: string): string {
  return store.getResourcePath(bucket, undefined, 'uploads');
}

/**
 * An upload as s3rver's store lays it out: `<bucket>/._S3rver_uploads/<uploadId>/` holding `key`,
 * `metadata` (both written on initiation) and `<n>` / `<n>.md5` per part. A folder without `key` is
 * a part write racing an abort, not an upload.
 */
async function readUpload(
  store: MultipartStore,
  bucket: string,
  uploadId: string,
): Promise<Upload | undefined> {
  if (!safeUploadId.test(uploadId)) return undefined;
  const dir = path.join(uploadsDir(store, bucket), uploadId);
  try {
    const keyFile = path.join(dir, 'key');
    const [key, info] = await Promise.all([readFile(keyFile, 'utf8'), stat(keyFile)]);
    return { key, uploadId, initiated: info.mtime, dir };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The upload `uploadId` of `key`, or NoSuchUpload (as S3 answers for an id of another key). */
async function requireUpload(store: MultipartStore, bucket: string, key: string, uploadId: string) {
  const upload = await readUpload(store, bucket, uploadId);
  if (!upload || upload.key !== key) throw noSuchUpload(uploadId);
  return upload;
}

async function listUploads(store: MultipartStore, bucket: string): Promise<Upload[]> {
  let ids: string[];
  try {
    ids = await readdir(uploadsDir(store, bucket));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const uploads = await Promise.all(ids.map((id) => readUpload(store, bucket, id)));
  return uploads
    .filter((u): u is Upload => u !== undefined)
    .sort((a, b) => (a.key === b.key ? a.uploadId.localeCompare(b.uploadId) : a.key < b.key ? -1 : 1));
}

function pageSize(value: unknown): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : maxListing;
  return Math.min(n, maxListing);
}

const person = (account: { id: number | string; displayName: string }) => ({
  ID: account.id,
  DisplayName: account.displayName,
});

/** ListMultipartUploads: uploads in key order, with prefix, delimiter, markers and max-uploads. */
async function listMultipartUploads(ctx: KoaContext, store: MultipartStore, bucket: string) {
  const query = ctx.query as Record<string, string | undefined>;
  const prefix = query.prefix ?? '';
  const delimiter = query.delimiter ?? '';
  const keyMarker = query['key-marker'] ?? '';
  const uploadIdMarker = query['upload-id-marker'] ?? '';
  const maxUploads = pageSize(query['max-uploads']);
  const after = (u: Upload) =>
    keyMarker === '' ||
    u.key > keyMarker ||
    (u.key === keyMarker && uploadIdMarker !== '' && u.uploadId > uploadIdMarker);
  const uploads: Upload[] = [];
  const prefixes: string[] = [];
  let truncated = false;
  for (const upload of await listUploads(store, bucket)) {
    if (!upload.key.startsWith(prefix) || !after(upload)) continue;
    const cut = delimiter ? upload.key.indexOf(delimiter, prefix.length) : -1;
    const common = cut === -1 ? undefined : upload.key.slice(0, cut + delimiter.length);
    if (common !== undefined && prefixes.includes(common)) continue;
    if (uploads.length + prefixes.length === maxUploads) {
      truncated = true;
      break;
    }
    if (common !== undefined) prefixes.push(common);
    else uploads.push(upload);
  }
  const owner = person((ctx.state.account as typeof DUMMY_ACCOUNT | undefined) ?? DUMMY_ACCOUNT);
  const last = uploads.at(-1);
  ctx.body = {
    ListMultipartUploadsResult: {
      '@': { xmlns },
      Bucket: bucket,
      KeyMarker: keyMarker,
      UploadIdMarker: uploadIdMarker,
      NextKeyMarker: truncated ? (last?.key ?? prefixes.at(-1) ?? '') : '',
      NextUploadIdMarker: truncated ? (last?.uploadId ?? '') : '',
      Prefix: prefix,
      ...(delimiter ? { Delimiter: delimiter } : {}),
      MaxUploads: maxUploads,
      IsTruncated: truncated,
      Upload: uploads.map((u) => ({
        Key: u.key,
        UploadId: u.uploadId,
        Initiator: owner,
        Owner: owner,
        StorageClass: 'STANDARD',
        Initiated: u.initiated.toISOString(),
      })),
      CommonPrefixes: prefixes.map((p) => ({ Prefix: p })),
    },
  };
}

/** ListParts: the parts written so far, in part number order, after part-number-marker. */
async function listParts(
  ctx: KoaContext,
  store: MultipartStore,
  bucket: string,
  key: string,
  uploadId: string,
) {
  const upload = await requireUpload(store, bucket, key, uploadId);
  const query = ctx.query as Record<string, string | undefined>;
  const marker = Number(query['part-number-marker'] ?? 0) || 0;
  const maxParts = pageSize(query['max-parts']);
  const numbers = (await readdir(upload.dir))
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((n) => n > marker)
    .sort((a, b) => a - b);
  const parts: { PartNumber: number; LastModified: string; ETag: string; Size: number }[] = [];
  for (const n of numbers) {
    // A part still being written has no checksum yet; S3 lists only parts it has stored.
    const etag = await readFile(path.join(upload.dir, `${n}.md5`), 'utf8').catch(() => undefined);
    if (etag === undefined) continue;
    const info = await stat(path.join(upload.dir, String(n)));
    parts.push({ PartNumber: n, LastModified: info.mtime.toISOString(), ETag: `"${etag}"`, Size: info.size });
  }
  const page = parts.slice(0, maxParts);
  const truncated = parts.length > maxParts;
  const owner = person((ctx.state.account as typeof DUMMY_ACCOUNT | undefined) ?? DUMMY_ACCOUNT);
  ctx.body = {
    ListPartsResult: {
      '@': { xmlns },
      Bucket: bucket,
      Key: key,
      UploadId: uploadId,
      Initiator: owner,
      Owner: owner,
      StorageClass: 'STANDARD',
      PartNumberMarker: marker,
      NextPartNumberMarker: page.at(-1)?.PartNumber ?? marker,
      MaxParts: maxParts,
      IsTruncated: truncated,
      Part: page,
    },
  };
}

/**
 * Koa middleware, placed before s3rver's router, adding what s3rver 3.7 lacks of the multipart API:
 * AbortMultipartUpload, ListParts and ListMultipartUploads, answered the way S3 answers them (XML
 * bodies, NoSuchUpload), over s3rver's own filesystem layout for uploads. UploadPart and
 * CompleteMultipartUpload for an unknown or aborted upload answer NoSuchUpload as on S3; s3rver would
 * otherwise recreate the folder of an aborted upload for a late part, or fail with a 500.
 */
export function multipartOperations(store: MultipartStore, authenticate: KoaMiddleware): KoaMiddleware {
  return async (ctx, next) => {
    const query = ctx.query as Record<string, string | undefined>;
    const target = parsePath(ctx.path);
    const uploadId = query.uploadId;
    const isListing = ctx.method === 'GET' && target?.key === undefined && 'uploads' in query;
    if (!target || (!isListing && (target.key === undefined || uploadId === undefined))) return next();
    const { bucket, key } = target;
    // s3rver's router would authenticate these requests; here they never reach it.
    ctx.params = { bucket, ...(key === undefined ? {} : { key }) };
    let authenticated = false;
    await authenticate(ctx, async () => {
      authenticated = true;
    });
    if (!authenticated) return;
    if (!(await store.getBucket(bucket))) {
      throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
    }
    if (isListing) return listMultipartUploads(ctx, store, bucket);
    switch (ctx.method) {
      case 'GET':
        return listParts(ctx, store, bucket, key!, uploadId!);
      case 'DELETE': {
        const upload = await requireUpload(store, bucket, key!, uploadId!);
        await rm(upload.dir, { recursive: true, force: true });
        ctx.status = 204;
        return;
      }
      case 'PUT':
      case 'POST':
        await requireUpload(store, bucket, key!, uploadId!);
        return next();
      default:
        return next();
    }
  };
}
