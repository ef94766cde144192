import type { Request, Response } from 'express';

import { findWorkspaceFile } from '../../shared/db/queries/files.ts';
import { errors } from '../../shared/errors/appError.ts';
import { sendStoredObject, type StoredBytes } from './sendStoredObject.ts';

/**
 * A workspace's file's bytes as a download, for the API and the console's media board alike.
 * @throws AppError not_found, range_not_satisfiable.
 */
export async function sendWorkspaceFile(
  req: Request,
  res: Response,
  { pool, objectStore }: StoredBytes,
  workspaceId: string,
  fileId: string,
): Promise<void> {
  const file = await findWorkspaceFile(pool, workspaceId, fileId);
  if (!file) throw errors.notFound('file', fileId);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  await sendStoredObject(req, res, objectStore, {
    key: file.storage_key,
    sizeBytes: file.size_bytes,
    contentType: file.mime_type,
    // A file's bytes never change under its id.
    etag: `"${file.id}"`,
    filename: file.filename,
    disposition: 'attachment',
    lastModified: new Date(file.created_at),
  });
}
