import type { Request, RequestHandler } from 'express';

import { insertFile } from '../../../shared/db/queries/files.ts';
import { AppError, type Issue } from '../../../shared/errors/appError.ts';
import { contentFitsDeclared, isMediaType, refusedDeclaredType } from '../../../shared/files/contentPolicy.ts';
import { fileObjectKey, toFileDto } from '../../../shared/files/dto.ts';
import { scheduleDocumentParse } from '../../../shared/files/nativeDocuments.ts';
import {
  commitStorage,
  releaseStorage,
  reserveStorage,
  type StorageHold,
} from '../../../shared/files/storageQuota.ts';
import { newId } from '../../../shared/ids.ts';
import { isStorableText, unstorableMessage } from '../../../shared/storableText.ts';
import type { AppDeps } from '../../deps.ts';
import { type ReceivedUpload, receiveUpload, type UploadReservation } from '../../uploads/receiveUpload.ts';
import { openUploadIdempotency } from '../../uploads/uploadIdempotency.ts';

// Long enough for a slow 100 MiB upload; a hold left by a process that died stops counting then.
const holdSeconds = 3600;

/** The checks the validator makes for JSON bodies, made here for the multipart one. */
function checkUpload(received: ReceivedUpload, hold: StorageHold | undefined, maxBytes: number): void {
  if (received.unsupportedType !== undefined) {
    throw new AppError(
      'unsupported_media_type',
      received.contentRefused
        ? `The file's content does not match its declared type ${received.unsupportedType}.`
        : `Files of type ${received.unsupportedType} are not accepted.`,
    );
  }
  if (received.tooLarge) {
    // The hold is what the quota had left: a file past it is one the quota cannot take.
    if (hold && hold.bytes < maxBytes) throw quotaFull(hold);
    throw new AppError(
      'file_too_large',
      `A direct upload may be at most ${sizeText(maxBytes)}; use POST /files/uploads for larger files.`,
    );
  }
  const issues: Issue[] = [...received.issues];
  const stored = received.stored;
  if (!stored) issues.push({ path: 'file', message: 'is required' });
  else if (!isMediaType(stored.mimeType)) {
    issues.push({ path: 'file', message: 'Content-Type must be a media type such as image/png' });
  }
  else if (stored.filename.length === 0 || stored.filename.length > 255) {
    issues.push({ path: 'file', message: 'filename must be 1 to 255 characters' });
  } else if (!isStorableText(stored.filename)) {
    issues.push({ path: 'file', message: `filename ${unstorableMessage}` });
  }
  if (issues.length > 0) {
    throw new AppError('invalid_request_body', 'The request body does not match the schema.', { issues });
  }
}

const sizeText = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${bytes} bytes`;

function quotaFull(hold: StorageHold): AppError {
  return new AppError(
    'storage_quota_exceeded',
    `The file is larger than the ${hold.bytes} bytes the workspace storage quota has left.`,
  );
}

/** The quota hold for one upload: what the body can hold at most, or what the quota has left. */
function holdFor(deps: AppDeps, req: Request, onHold: (hold: StorageHold) => void) {
  const maxBytes = deps.config.filesDirectMaxBytes;
  return async (): Promise<UploadReservation> => {
    const declared = Number(req.get('content-length'));
    const bytes = Number.isSafeInteger(declared) && declared >= 0 ? Math.min(declared, maxBytes) : maxBytes;
    const hold = await reserveStorage(deps.pool, {
      workspaceId: req.principal!.workspaceId,
      bytes,
      ttlSeconds: holdSeconds,
      partial: true,
    });
    onHold(hold);
    return { maxBytes: hold.bytes, release: () => releaseStorage(deps.pool, hold) };
  };
}

/**
 * POST /files: the file is streamed to object storage as it arrives, against a quota hold taken
 * before the body is read, and recorded in the drive of the person the credential acts for; the
 * hold becomes stored bytes in the transaction that records the file.
 */
export function uploadFile(deps: AppDeps): RequestHandler {
  return async (req, res) => {
    const principal = req.principal!;
    const fileId = newId('file');
    let hold: StorageHold | undefined;
    const received = await receiveUpload(
      req,
      res,
      {
        fileField: 'file',
        maxFileBytes: deps.config.filesDirectMaxBytes,
        textFields: [],
        acceptsFile: (mimeType) => !refusedDeclaredType(mimeType),
        acceptsContent: (head, mimeType) => contentFitsDeclared(mimeType, head),
        objectKey: fileObjectKey(principal.workspaceId, fileId),
        reserve: holdFor(deps, req, (h) => (hold = h)),
      },
      {
        store: deps.objectStore,
        gauge: deps.uploads,
        idleTimeoutMs: deps.config.uploadIdleTimeoutMs,
        logger: deps.logger,
      },
    );
    // What the request log reads for JSON bodies.
    req.body = received.stored
      ? { file: { filename: received.stored.filename, mimeType: received.stored.mimeType, sizeBytes: received.stored.sizeBytes } }
      : {};
    try {
      checkUpload(received, hold, deps.config.filesDirectMaxBytes);
    } catch (error) {
      await received.discard();
      throw error;
    }
    if (await openUploadIdempotency(deps, req, res, received, 'file')) return;
    const stored = received.stored!;
    try {
      await deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        await commitStorage(tx, hold!, stored.sizeBytes);
        const row = await insertFile(tx, {
          id: fileId,
          workspaceId: principal.workspaceId,
          memberId: principal.memberId,
          filename: stored.filename,
          mimeType: stored.mimeType,
          sizeBytes: stored.sizeBytes,
          kind: 'file',
          storageKey: stored.key,
        });
        await scheduleDocumentParse(tx, { id: row.id, workspaceId: row.workspace_id, filename: row.filename });
        return { body: { file: toFileDto(row) }, location: null };
      });
    } catch (error) {
      await received.discard();
      throw error;
    }
  };
}
