import { pipeline } from 'node:stream/promises';

import type { RequestHandler } from 'express';

import { currentDeckPdf, findFileDocument } from '../../../shared/db/queries/fileDocuments.ts';
import { findWorkspaceFile } from '../../../shared/db/queries/files.ts';
import { AppError, errors } from '../../../shared/errors/appError.ts';
import {
  exportContentType,
  type ExportFormat,
  exportFormatsOf,
  isNativeKind,
} from '../../../shared/files/nativeDocuments.ts';
import type { AppDeps } from '../../deps.ts';
import { contentDisposition } from '../../downloads/contentDisposition.ts';

const unsupported = (kind: string, format: string) =>
  new AppError('unsupported_export_format', `A file of kind ${kind} cannot be exported as ${format}.`);

/** The file's name with the export format's extension. */
export function exportName(filename: string, format: string): string {
  const dot = filename.lastIndexOf('.');
  return `${dot > 0 ? filename.slice(0, dot) : filename}.${format}`;
}

/**
 * GET /files/{fileId}/export?format=: streams the stored bytes of the format (the upload, a sheet's
 * converted copy, a deck's current PDF). Always a download with nosniff; exported HTML is the
 * user's own markup, so it also gets a sandboxing CSP: opened on our origin it cannot run script.
 */
export function exportFile({ pool, objectStore }: AppDeps): RequestHandler {
  return async (req, res) => {
    const fileId = req.params.fileId as string;
    const format = req.query.format as ExportFormat; // one of the five, enforced by the validator
    const file = await findWorkspaceFile(pool, req.principal!.workspaceId, fileId);
    if (!file) throw errors.notFound('file', fileId);
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
    const stat = await objectStore.stat(key);
    if (!stat) throw new AppError('internal_error', 'The exported bytes are missing.');
    res.status(200);
    res.setHeader('Content-Type', exportContentType[format]);
    res.setHeader('Content-Length', String(stat.size));
    res.setHeader('Content-Disposition', contentDisposition('attachment', exportName(file.filename, format)));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (format === 'html') res.setHeader('Content-Security-Policy', 'sandbox');
    await pipeline(await objectStore.get(key), res);
  };
}
