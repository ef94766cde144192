import type { RequestHandler } from 'express';

import { findWorkspaceFile } from '../../../shared/db/queries/files.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toFileDto } from '../../../shared/files/dto.ts';
import type { AppDeps } from '../../deps.ts';

/** GET /files/{fileId}: a file of another workspace is not_found. */
export function getFile({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const fileId = req.params.fileId as string;
    const file = await findWorkspaceFile(pool, req.principal!.workspaceId, fileId);
    if (!file) throw errors.notFound('file', fileId);
    res.json({ file: toFileDto(file) });
  };
}
