import type { DatabasePool } from 'slonik';

import { currentDeckPdf, type ExportFormat, findFileDocument } from '../db/queries/fileDocuments.ts';
import { findWorkspaceFile } from '../db/queries/files.ts';
import { AppError, found } from '../errors/appError.ts';
import { exportContentType, exportFormatsOf, isNativeKind } from './nativeDocuments.ts';

const unsupported = (kind: string, format: string) =>
  new AppError('unsupported_export_format', `A file of kind ${kind} cannot be exported as ${format}.`);

/** The file's name with the export format's extension. */
export function exportName(filename: string, format: string): string {
  const dot = filename.lastIndexOf('.');
  return `${dot > 0 ? filename.slice(0, dot) : filename}.${format}`;
}

/**
 * Where a file's export in `format` is stored (the upload, a sheet's converted copy, a deck's
 * current PDF), with the name and type it is served under.
 * @throws AppError not_found, unsupported_export_format, export_not_rendered
 */
export async function findExport(
  pool: DatabasePool,
  workspaceId: string,
  fileId: string,
  format: ExportFormat,
): Promise<{ key: string; filename: string; contentType: string }> {
  const file = found(await findWorkspaceFile(pool, workspaceId, fileId), 'file', fileId);
  if (!isNativeKind(file.kind) || !exportFormatsOf[file.kind].includes(format)) {
    throw unsupported(file.kind, format);
  }
  const doc = await findFileDocument(pool, file.id);
  if (!doc) throw unsupported(file.kind, format);
  const key = format === 'pdf' ? currentDeckPdf(doc)?.key : doc.exports[format];
  if (!key) {
    if (format === 'pdf') {
      throw new AppError(
        'export_not_rendered',
        'The deck has no PDF yet: render it, wait for the job, export again.',
      );
    }
    throw unsupported(file.kind, format);
  }
  return { key, filename: exportName(file.filename, format), contentType: exportContentType[format] };
}
