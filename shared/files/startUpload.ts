import type { DatabasePool } from 'slonik';

import { extendStorageReservation } from '../db/queries/storageReservations.ts';
import { insertUploadSession, type NewUploadSession } from '../db/queries/uploadSessions.ts';
import type { Db } from '../db/sql.ts';
import { AppError, errors } from '../errors/appError.ts';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../primitives/ids.ts';
import type { ObjectStore } from '../storage/objectStore.ts';
import { isMediaType, refusedDeclaredType } from './contentPolicy.ts';
import { fileObjectKey } from './dto.ts';
import { maxPresignedBytes, partLayout, sessionSeconds } from './presignedUploads.ts';
import { releaseStorageHold, takeStorageHold } from './storageHoldLease.ts';

export type UploadRequest = { filename: string; mimeType: string; sizeBytes: number };

// The hold outlives the session a little: a complete that started in time still finds it.
const holdSeconds = sessionSeconds + 600;

/**
 * A presigned upload begun: its session row to record, the answer that names its part URLs, and how
 * to give everything back when the row is not recorded after all.
 */
export type StartedUpload = {
  session: NewUploadSession;
  answer: { upload: Record<string, unknown> };
  /** Records the session in `tx`, its quota hold kept from then on for the session's life. */
  record(tx: Db): Promise<void>;
  abandon(): Promise<void>;
};

/** @throws AppError invalid_request_body, unsupported_media_type, file_too_large */
function checkUploadRequest(request: UploadRequest): void {
  if (!isMediaType(request.mimeType)) {
    throw errors.invalidBody([{ path: 'mimeType', message: 'must be a media type such as image/png' }]);
  }
  if (refusedDeclaredType(request.mimeType)) {
    throw new AppError('unsupported_media_type', `Files of type ${request.mimeType} are not accepted.`);
  }
  if (request.sizeBytes > maxPresignedBytes) {
    throw new AppError(
      'file_too_large',
      `A presigned upload may be at most ${maxPresignedBytes} bytes (5 TiB).`,
    );
  }
}

/**
 * Begins a real S3 multipart upload with one presigned PUT URL per part, signed for the public S3
 * endpoint. The whole size is held against the quota until the session completes or expires (the
 * sweeper then aborts the S3 upload, so no parts stay behind). A failure on the way gives back what
 * was taken.
 * @throws what checkUploadRequest and reserveStorage throw.
 */
export async function startPresignedUpload(
  deps: { pool: DatabasePool; objectStore: ObjectStore; logger: Logger },
  owner: { workspaceId: string; memberId: string },
  request: UploadRequest,
): Promise<StartedUpload> {
  checkUploadRequest(request);
  const { pool, objectStore: store } = deps;
  const id = newId('upl');
  const { partSize, partCount } = partLayout(request.sizeBytes);
  // A lease until the session is recorded: a hold whose session never was stops counting soon.
  const hold = await takeStorageHold(
    pool,
    { id, workspaceId: owner.workspaceId, bytes: request.sizeBytes },
    deps.logger,
  );
  const storageKey = fileObjectKey(owner.workspaceId, newId('file'));
  let s3UploadId: string | undefined;
  const abandon = async () => {
    if (s3UploadId !== undefined) await store.abortMultipart(storageKey, s3UploadId).catch(() => {});
    await releaseStorageHold(pool, hold, deps.logger);
  };
  try {
    s3UploadId = await store.startMultipart(storageKey, request.mimeType);
    const parts: { partNumber: number; url: string }[] = [];
    for (let partNumber = 1; partNumber <= partCount; partNumber++) {
      parts.push({
        partNumber,
        url: await store.presignPart(storageKey, s3UploadId, partNumber, sessionSeconds),
      });
    }
    const session = {
      id,
      ...owner,
      ...request,
      partSize,
      partCount,
      storageKey,
      s3UploadId,
      ttlSeconds: sessionSeconds,
    };
    const upload = { sessionId: id, partSize, partCount, parts, expiresInSeconds: sessionSeconds };
    const record = async (tx: Db) => {
      await insertUploadSession(tx, session);
      // Expired already (the lease ran out while the parts were signed): the hold no longer counts,
      // so the session cannot be recorded against it.
      if (!(await extendStorageReservation(tx, id, holdSeconds))) {
        throw new Error(`the quota hold of upload ${id} expired before its session was recorded`);
      }
    };
    return { session, answer: { upload }, record, abandon };
  } catch (error) {
    await abandon();
    throw error;
  }
}
