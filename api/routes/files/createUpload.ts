import type { RequestHandler } from 'express';

import { insertUploadSession } from '../../../shared/db/queries/uploadSessions.ts';
import { AppError, errors } from '../../../shared/errors/appError.ts';
import { isMediaType, refusedDeclaredType } from '../../../shared/files/contentPolicy.ts';
import { fileObjectKey } from '../../../shared/files/dto.ts';
import { maxPresignedBytes, partLayout, sessionSeconds } from '../../../shared/files/presignedUploads.ts';
import { releaseStorage, reserveStorage } from '../../../shared/files/storageQuota.ts';
import { newId } from '../../../shared/ids.ts';
import type { AppDeps } from '../../deps.ts';

type CreateUploadBody = { filename: string; mimeType: string; sizeBytes: number };

// The hold outlives the session a little: a complete that started in time still finds it.
const holdSeconds = sessionSeconds + 600;

/**
 * POST /files/uploads: a real S3 multipart upload with one presigned PUT URL per part, signed for
 * the public S3 endpoint. The whole size is held against the quota until the session completes or
 * expires (the sweeper then aborts the S3 upload, so no parts stay behind).
 */
export function createUpload(deps: AppDeps): RequestHandler {
  const store = deps.objectStore;
  return async (req, res) => {
    const principal = req.principal!;
    const body = req.body as CreateUploadBody; // shape enforced by the OpenAPI validator
    if (!isMediaType(body.mimeType)) {
      throw errors.invalidBody([{ path: 'mimeType', message: 'must be a media type such as image/png' }]);
    }
    if (refusedDeclaredType(body.mimeType)) {
      throw new AppError('unsupported_media_type', `Files of type ${body.mimeType} are not accepted.`);
    }
    if (body.sizeBytes > maxPresignedBytes) {
      throw new AppError(
        'file_too_large',
        `A presigned upload may be at most ${maxPresignedBytes} bytes (5 TiB).`,
      );
    }
    const id = newId('upl');
    const fileId = newId('file');
    const { partSize, partCount } = partLayout(body.sizeBytes);
    const hold = await reserveStorage(deps.pool, {
      id,
      workspaceId: principal.workspaceId,
      bytes: body.sizeBytes,
      ttlSeconds: holdSeconds,
    });
    const storageKey = fileObjectKey(principal.workspaceId, fileId);
    let uploadId: string | undefined;
    try {
      uploadId = await store.startMultipart(storageKey, body.mimeType);
      const parts: { partNumber: number; url: string }[] = [];
      for (let partNumber = 1; partNumber <= partCount; partNumber++) {
        parts.push({
          partNumber,
          url: await store.presignPart(storageKey, uploadId, partNumber, sessionSeconds),
        });
      }
      const s3UploadId = uploadId;
      await deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        await insertUploadSession(tx, {
          id,
          workspaceId: principal.workspaceId,
          memberId: principal.memberId,
          filename: body.filename,
          mimeType: body.mimeType,
          sizeBytes: body.sizeBytes,
          partSize,
          partCount,
          storageKey,
          s3UploadId,
          ttlSeconds: sessionSeconds,
        });
        return {
          body: { upload: { sessionId: id, partSize, partCount, parts, expiresInSeconds: sessionSeconds } },
          location: null,
        };
      });
    } catch (error) {
      if (uploadId !== undefined) await store.abortMultipart(storageKey, uploadId).catch(() => {});
      await releaseStorage(deps.pool, hold).catch(() => {});
      throw error;
    }
  };
}
