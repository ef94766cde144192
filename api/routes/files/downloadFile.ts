import type { Request, RequestHandler, Response } from 'express';

import { findWorkspaceFile } from '../../../shared/db/queries/files.ts';
import { errors } from '../../../shared/errors/appError.ts';
import type { AppDeps } from '../../deps.ts';
import { sendStoredObject } from '../../downloads/sendStoredObject.ts';

/**
 * GET /files/{fileId}/content: the bytes, single ranges answered 206 (sendStoredObject). Always a
 * download that the browser must not sniff or run: a user's HTML or SVG opened from our origin would
 * otherwise run its script with the origin's cookies.
 */
export function downloadFile({ pool, objectStore }: AppDeps): RequestHandler {
  return (req, res) =>
    sendWorkspaceFile(
      req,
      res,
      { pool, objectStore },
      req.principal!.workspaceId,
      req.params.fileId as string,
    );
}

/**
 * A workspace's file's bytes as a download, for the API and the console's media board alike.
 * @throws AppError not_found, range_not_satisfiable.
 */
export async function sendWorkspaceFile(
  req: Request,
  res: Response,
  { pool, objectStore }: Pick<AppDeps, 'pool' | 'objectStore'>,
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
