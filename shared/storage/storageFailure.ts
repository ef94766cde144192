/** Where a storage call went: named in messages and logs (never the credentials). */
export type StorageTarget = { bucket: string; endpoint: string };

/**
 * Object storage could not serve a call for now: unreachable, overloaded, answering what the client
 * cannot read, or set up wrong (the bucket gone, the credentials refused). Not the caller's fault and
 * not a bug here: the api answers 503 service_unavailable, a job retries later. The message says
 * what happened and where (bucket, endpoint), for the log line an operator reads; `cause` is the
 * client's own error.
 */
export class StorageUnavailableError extends Error {
  readonly target: StorageTarget;

  constructor(message: string, target: StorageTarget, cause: unknown) {
    super(message, { cause });
    this.name = 'StorageUnavailableError';
    this.target = target;
  }
}

// S3 error codes (the S3 API reference's "List of error codes") that say the service, not the
// request, failed: retried by every AWS SDK.
const transientCodes = new Set([
  'InternalError',
  'ServiceUnavailable',
  'SlowDown',
  'RequestTimeout',
  'RequestTimeTooSkewed',
  'OperationAborted',
]);

// Codes that say the deployment is set up wrong: nothing a client can fix by sending another request.
const setupCodes = new Set([
  'NoSuchBucket',
  'AccessDenied',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AuthorizationHeaderMalformed',
  'PermanentRedirect',
]);

// Socket-level failures of Node's http client (and our idle timeout, ETIMEDOUT): the server is gone,
// restarting, or not answering. "socket hang up" is ECONNRESET.
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

const stringField = (value: unknown, key: string): string | undefined => {
  const field =
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
  return typeof field === 'string' && field !== '' ? field : undefined;
};

/**
 * Why `error`, thrown by the S3 client, means storage is unavailable (a sentence for the log), or
 * undefined when it is an answer the caller handles itself (NoSuchKey, NoSuchUpload, InvalidPart…).
 * Read structurally, not with instanceof: minio's classes, a plain object minio throws for an
 * <Error> document inside a 200 (parseXml), and Node's socket errors all arrive here.
 */
function unavailableReason(error: unknown, target: StorageTarget): string | undefined {
  const where = `bucket '${target.bucket}' at ${target.endpoint}`;
  const name = stringField(error, 'name');
  if (name === 'S3Error' || stringField(error, 'Code') !== undefined) {
    const code = stringField(error, 'code') ?? stringField(error, 'Code');
    if (code === undefined) return `S3 answered ${where} with an error the client could not read`;
    if (code === 'NoSuchBucket') {
      return `${where} does not exist: run the release process (npm run release), which creates it, or fix S3_BUCKET`;
    }
    if (setupCodes.has(code)) {
      return `S3 refused the credentials for ${where} (${code}): check S3_ACCESS_KEY, S3_SECRET_KEY, S3_REGION and the bucket policy`;
    }
    if (transientCodes.has(code)) return `S3 answered ${code} for ${where}`;
    // A bare object with a Code is an <Error> inside a 200 answer: not one of the answers a caller expects.
    return name === 'S3Error' ? undefined : `S3 answered ${where} with ${code} inside a 200 answer`;
  }
  if (name === 'InvalidXMLError') return `S3 answered ${where} with a document the client could not read`;
  const code = stringField(error, 'code');
  if (code !== undefined && networkCodes.has(code)) {
    return `S3 at ${target.endpoint} could not be reached (${code})`;
  }
  return undefined;
}

/**
 * `error` as a StorageUnavailableError when it means storage is unavailable (see unavailableReason),
 * otherwise `error` itself. The one place that tells an outage from an answer.
 */
export function asStorageFailure(error: unknown, target: StorageTarget): unknown {
  if (error instanceof StorageUnavailableError) return error;
  const reason = unavailableReason(error, target);
  return reason === undefined ? error : new StorageUnavailableError(reason, target, error);
}

/** Whether `error` or one of its causes is a StorageUnavailableError (by name: any module realm). */
export function isStorageUnavailable(error: unknown): boolean {
  const seen = new Set<unknown>();
  let current = error;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    if ((current as { name?: unknown }).name === 'StorageUnavailableError') return true;
    seen.add(current);
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** An endpoint as logs and messages may show it: no user info, no query. */
export function displayEndpoint(endpoint: string): string {
  try {
    const url = new URL(endpoint);
    return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return '(an invalid S3_ENDPOINT)';
  }
}
