import type { RequestHandler } from 'express';

import {
  completeUploadInTransaction,
  endRefusedUpload,
  type NamedPart,
  UploadContentRefused,
} from '../../../shared/files/completeUpload.ts';
import { toFileDto } from '../../../shared/files/dto.ts';
import type { AppDeps } from '../../deps.ts';

/**
 * POST /files/uploads/{uploadId}/complete: the file is assembled and recorded in one transaction
 * with the Idempotency-Key's answer; content that does not match its declared type ends the upload.
 */
export function completeUpload(deps: AppDeps): RequestHandler {
  return async (req, res) => {
    const upload = {
      workspaceId: req.principal!.workspaceId,
      uploadId: req.params.uploadId as string,
      parts: (req.body as { parts: NamedPart[] }).parts, // shape enforced by the OpenAPI validator
    };
    try {
      await deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        const file = await completeUploadInTransaction(tx, deps.objectStore, upload);
        return { body: { file: toFileDto(file) }, location: null };
      });
    } catch (error) {
      if (!(error instanceof UploadContentRefused)) throw error;
      await endRefusedUpload(deps.pool, deps.objectStore, error.session);
      throw error.toAppError();
    }
  };
}
