import type { RequestHandler } from 'express';

import type { AppDeps } from '../../deps.ts';
import { sendWorkspaceVideo } from '../../downloads/workspaceVideo.ts';

/**
 * GET /videos/{videoId}/file: the clip's bytes, Range requests answered 206 (sendStoredObject);
 * video_not_ready while it renders or after it failed. Served inline (a player streams it), so,
 * as for files, the browser must not sniff it into something else or run it: a stored object
 * labelled video/mp4 whose bytes are HTML or SVG would otherwise run script on our origin.
 */
export function downloadVideo({ pool, objectStore }: AppDeps): RequestHandler {
  return (req, res) =>
    sendWorkspaceVideo(
      req,
      res,
      { pool, objectStore },
      req.principal!.workspaceId,
      req.params.videoId as string,
    );
}
