import { pipeline } from 'node:stream/promises';

import type { RequestHandler } from 'express';

import type { ExportFormat } from '../../../shared/db/queries/fileDocuments.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { findExport } from '../../../shared/files/findExport.ts';
import type { AppDeps } from '../../deps.ts';
import { contentDisposition } from '../../downloads/contentDisposition.ts';

/**
 * GET /files/{fileId}/export?format=: streams the stored bytes of the format (findExport). Always a
 * download with nosniff; exported HTML is the user's own markup, so it also gets a sandboxing CSP:
 * opened on our origin it cannot run script.
 */
export function exportFile({ pool, objectStore }: AppDeps): RequestHandler {
  return async (req, res) => {
    const format = req.query.format as ExportFormat; // one of the five, enforced by the validator
    const found = await findExport(pool, req.principal!.workspaceId, req.params.fileId as string, format);
    const stat = await objectStore.stat(found.key);
    if (!stat) throw new AppError('internal_error', 'The exported bytes are missing.');
    res.status(200);
    res.setHeader('Content-Type', found.contentType);
    res.setHeader('Content-Length', String(stat.size));
    res.setHeader('Content-Disposition', contentDisposition('attachment', found.filename));
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (format === 'html') res.setHeader('Content-Security-Policy', 'sandbox');
    await pipeline(await objectStore.get(found.key), res);
  };
}
