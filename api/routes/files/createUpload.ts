import type { RequestHandler } from 'express';

import { startPresignedUpload, type UploadRequest } from '../../../shared/files/startUpload.ts';
import type { AppDeps } from '../../deps.ts';

/** POST /files/uploads: a presigned multipart upload (startPresignedUpload), its session recorded. */
export function createUpload(deps: AppDeps): RequestHandler {
  return async (req, res) => {
    const { workspaceId, memberId } = req.principal!;
    const { filename, mimeType, sizeBytes } = req.body as UploadRequest; // shape enforced by the validator
    const started = await startPresignedUpload(
      deps,
      { workspaceId, memberId },
      { filename, mimeType, sizeBytes },
    );
    try {
      await deps.idempotency.answerFromTransaction(req, res, 201, async (tx) => {
        await started.record(tx);
        return { body: started.answer, location: null };
      });
    } catch (error) {
      await started.abandon();
      throw error;
    }
  };
}
