import type { RequestHandler } from 'express';

import { checkDirectUpload, recordDirectUpload } from '../../../shared/files/directUpload.ts';
import { toFileDto } from '../../../shared/files/dto.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import type { AppDeps } from '../../deps.ts';
import { openUploadIdempotency } from '../../idempotency/uploadKey.ts';
import { discardIfThrows } from '../../uploads/discardIfThrows.ts';
import { receiveFile } from '../../uploads/receiveFile.ts';
import { uploadSummary } from '../../uploads/uploadSummary.ts';

/**
 * POST /files: the file is streamed to object storage as it arrives, against a quota hold taken
 * before the body is read, and recorded in the drive of the person the credential acts for; the
 * hold becomes stored bytes in the transaction that records the file.
 */
export function uploadFile(deps: AppDeps): RequestHandler {
  return async (req, res) => {
    const { workspaceId, memberId } = req.principal!;
    const fileId = newId('file');
    const { received, hold } = await receiveFile(req, res, deps, fileId);
    const file = uploadSummary(received.stored);
    req.body = file ? { file } : {};
    await discardIfThrows(received, () => checkDirectUpload(received, hold, deps.config.filesDirectMaxBytes));
    if (await openUploadIdempotency(deps, req, res, received, 'file')) return;
    const upload = { fileId, workspaceId, memberId, hold: hold!, stored: received.stored! };
    await discardIfThrows(received, () =>
      deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        const row = await recordDirectUpload(tx, upload);
        return { body: { file: toFileDto(row) }, location: null };
      }),
    );
  };
}
