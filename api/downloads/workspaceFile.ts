import { findWorkspaceFile } from '../../shared/db/queries/files.ts';
import { found } from '../../shared/errors/appError.ts';
import { sendStoredObject, type WorkspaceDownload } from './sendStoredObject.ts';

/**
 * A workspace's file's bytes as a download, for the API and the console's media board alike.
 * @throws AppError not_found, range_not_satisfiable.
 */
export const sendWorkspaceFile: WorkspaceDownload = async (req, res, stored, workspaceId, fileId) => {
  const file = found(await findWorkspaceFile(stored.pool, workspaceId, fileId), 'file', fileId);
  await sendStoredObject(req, res, stored.objectStore, {
    key: file.storage_key,
    sizeBytes: file.size_bytes,
    contentType: file.mime_type,
    // A file's bytes never change under its id.
    etag: `"${file.id}"`,
    filename: file.filename,
    disposition: 'attachment',
    lastModified: new Date(file.created_at),
  });
};
