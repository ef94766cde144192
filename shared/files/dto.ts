import type { FileRow } from '../db/queries/files.ts';

/** The spec's File. */
export function toFileDto(row: FileRow) {
  return {
    id: row.id,
    filename: row.filename,
    mimeType: row.mime_type,
    sizeBytes: row.size_bytes,
    kind: row.kind,
    createdAt: row.created_at,
  };
}

/** Where a file's bytes live: per workspace, so an operator can find (or bill) a tenant's objects. */
export function fileObjectKey(workspaceId: string, fileId: string): string {
  return `files/${workspaceId}/${fileId}`;
}
