import type { RequestHandler } from 'express';

import { findWorkspaceVideo } from '../../../shared/db/queries/videos.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toVideoDto } from '../../../shared/videos/dto.ts';
import type { AppDeps } from '../../deps.ts';

/** GET /videos/{videoId} (DESIGN.md): a video of another workspace is not_found. */
export function getVideo({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const videoId = req.params.videoId as string;
    const video = await findWorkspaceVideo(pool, req.principal!.workspaceId, videoId);
    if (!video) throw errors.notFound('video', videoId);
    res.json({ video: toVideoDto(video) });
  };
}
