import type { Logger } from '../observability/logger.ts';
import type { ObjectStore } from './objectStore.ts';
import { isStorageUnavailable } from './storageFailure.ts';

/** The bucket could not be made ready; the message names the bucket, the endpoint and what to do. */
export class BucketSetupError extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'BucketSetupError';
  }
}

/** The S3 error code (or socket code) of `error` or the first of its causes that has one. */
function codeOf(error: unknown): string | undefined {
  const seen = new Set<unknown>();
  let current = error;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    seen.add(current);
    const { code, name } = current as { code?: unknown; name?: unknown };
    if (typeof code === 'string' && code !== '') return code;
    if (name === 'InvalidBucketNameError') return 'InvalidBucketName';
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** What went wrong, in words an operator acts on. */
function reasonFor(step: 'checked' | 'created', error: unknown): string {
  const code = codeOf(error);
  switch (code) {
    case 'AccessDenied':
      return step === 'created'
        ? 'the credentials may not create buckets (AccessDenied): create the bucket beforehand, or allow s3:CreateBucket'
        : // HeadBucket has no body: a wrong key, a missing permission and a foreign bucket all read 403.
          'S3 refused access (403 AccessDenied): check S3_ACCESS_KEY and S3_SECRET_KEY, that they may s3:ListBucket, and that no other account owns the name';
    case 'InvalidAccessKeyId':
    case 'SignatureDoesNotMatch':
      return `S3 does not accept the credentials (${code}): check S3_ACCESS_KEY and S3_SECRET_KEY`;
    case 'BucketAlreadyExists':
      return 'another account owns that name (BucketAlreadyExists): choose another S3_BUCKET';
    case 'InvalidBucketName':
      return 'it is not a valid bucket name (3-63 lowercase letters, digits, dots and hyphens): fix S3_BUCKET';
    case 'AuthorizationHeaderMalformed':
    case 'IllegalLocationConstraintException':
    case 'InvalidLocationConstraint':
      return `the region does not match (${code}): check S3_REGION`;
    default:
      if (isStorageUnavailable(error)) return `${(error as Error).message}`;
      return `S3 answered ${code ?? 'with an error'}${error instanceof Error && error.message ? `: ${error.message}` : ''}`;
  }
}

/**
 * Makes sure the bucket exists, creating it when missing (the release process and `npm start`).
 * Returns whether it had to create it.
 * @throws BucketSetupError when it cannot be checked or created (unreachable endpoint, refused
 *   credentials, a name owned elsewhere), its message naming the bucket and the endpoint.
 */
export async function prepareBucket(store: ObjectStore): Promise<boolean> {
  const { bucket, endpoint } = store.target;
  const fail = (step: 'checked' | 'created', error: unknown) =>
    new BucketSetupError(
      `S3 bucket '${bucket}' at ${endpoint} could not be ${step}: ${reasonFor(step, error)}`,
      error,
    );
  let exists: boolean;
  try {
    exists = await store.bucketExists();
  } catch (error) {
    throw fail('checked', error);
  }
  if (exists) return false;
  try {
    await store.createBucket();
  } catch (error) {
    throw fail('created', error);
  }
  return true;
}

/**
 * For web and worker processes, which do not create the bucket (release does, and their credentials
 * may rightly lack s3:CreateBucket): says at boot when the bucket is missing or storage unreachable,
 * and carries on. File calls answer 503 service_unavailable meanwhile; everything else works, and
 * nothing needs a restart once the bucket is there. Never throws.
 */
export async function reportBucket(store: ObjectStore, logger: Logger): Promise<void> {
  const { bucket, endpoint } = store.target;
  try {
    if (await store.bucketExists()) return;
    logger.error(
      { bucket, endpoint },
      `S3 bucket '${bucket}' at ${endpoint} does not exist: run the release process (npm run release), which creates it; until then file calls answer 503`,
    );
  } catch (error) {
    logger.warn(
      { bucket, endpoint, err: error },
      `S3 bucket '${bucket}' at ${endpoint} could not be checked: ${reasonFor('checked', error)}; file calls answer 503 until it can`,
    );
  }
}
