import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { sendWorkspaceFile } from '../../downloads/workspaceFile.ts';

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
