import type { RequestHandler } from 'express';

import { findWorkspaceFile } from '../../../shared/db/queries/files.ts';
import { found } from '../../../shared/errors/appError.ts';
import { toFileDto } from '../../../shared/files/dto.ts';
import type { AppDeps } from '../../deps.ts';

/** GET /files/{fileId}: a file of another workspace is not_found. */
export function getFile({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const fileId = req.params.fileId as string;
    const file = found(await findWorkspaceFile(pool, req.principal!.workspaceId, fileId), 'file', fileId);
    res.json({ file: toFileDto(file) });
  };
}
