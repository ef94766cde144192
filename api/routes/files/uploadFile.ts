import type { Request, RequestHandler, Response } from 'express';

import { contentFitsDeclared, refusedDeclaredType } from '../../../shared/files/contentPolicy.ts';
import { checkDirectUpload, recordDirectUpload } from '../../../shared/files/directUpload.ts';
import { fileObjectKey, toFileDto } from '../../../shared/files/dto.ts';
import { releaseStorage, reserveStorage, type StorageHold } from '../../../shared/files/storageQuota.ts';
import { newId } from '../../../shared/ids.ts';
import type { AppDeps } from '../../deps.ts';
import { discardIfThrows } from '../../uploads/discardIfThrows.ts';
import { receiveUpload, type UploadReservation } from '../../uploads/receiveUpload.ts';
import { openUploadIdempotency } from '../../uploads/uploadIdempotency.ts';

// Long enough for a slow 100 MiB upload; a hold left by a process that died stops counting then.
const holdSeconds = 3600;

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

/** The POST /files body: the `file` field streamed to the file's object, against a quota hold. */
function receiveFile(
  req: Request,
  res: Response,
  deps: AppDeps,
  fileId: string,
  onHold: (hold: StorageHold) => void,
) {
  return receiveUpload(
    req,
    res,
    {
      fileField: 'file',
      maxFileBytes: deps.config.filesDirectMaxBytes,
      textFields: [],
      acceptsFile: (mimeType) => !refusedDeclaredType(mimeType),
      acceptsContent: (head, mimeType) => contentFitsDeclared(mimeType, head),
      objectKey: fileObjectKey(req.principal!.workspaceId, fileId),
      reserve: holdFor(deps, req, onHold),
    },
    {
      store: deps.objectStore,
      gauge: deps.uploads,
      idleTimeoutMs: deps.config.uploadIdleTimeoutMs,
      logger: deps.logger,
    },
  );
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
    const received = await receiveFile(req, res, deps, fileId, (h) => (hold = h));
    // What the request log reads for JSON bodies.
    req.body = received.stored
      ? {
          file: {
            filename: received.stored.filename,
            mimeType: received.stored.mimeType,
            sizeBytes: received.stored.sizeBytes,
          },
        }
      : {};
    await discardIfThrows(received, () => checkDirectUpload(received, hold, deps.config.filesDirectMaxBytes));
    if (await openUploadIdempotency(deps, req, res, received, 'file')) return;
    const upload = {
      fileId,
      workspaceId: principal.workspaceId,
      memberId: principal.memberId,
      hold: hold!,
      stored: received.stored!,
    };
    await discardIfThrows(received, () =>
      deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        const row = await recordDirectUpload(tx, upload);
        return { body: { file: toFileDto(row) }, location: null };
      }),
    );
  };
}
