import { findWorkspaceVideoDownload } from '../../shared/db/queries/videos.ts';
import { AppError, errors, found } from '../../shared/errors/appError.ts';
import { videoFilename } from '../../shared/videos/dto.ts';
import { sendStoredObject, type WorkspaceDownload } from './sendStoredObject.ts';

/**
 * A workspace's video's bytes with Range, for the API and the console's media board alike.
 * @throws AppError not_found, video_not_ready, range_not_satisfiable.
 */
export const sendWorkspaceVideo: WorkspaceDownload = async (req, res, stored, workspaceId, videoId) => {
  const video = found(await findWorkspaceVideoDownload(stored.pool, workspaceId, videoId), 'video', videoId);
  if (video.status !== 'ready') {
    const why = video.status === 'failed' ? 'failed to render' : 'is still rendering';
    throw new AppError('video_not_ready', `The video ${why}; its file cannot be downloaded.`);
  }
  // Ready, but its file was deleted since.
  if (video.file_id === null || video.storage_key === null || video.size_bytes === null) {
    throw errors.notFound('video file', videoId);
  }
  await sendStoredObject(req, res, stored.objectStore, {
    key: video.storage_key,
    sizeBytes: video.size_bytes,
    contentType: video.mime_type ?? 'video/mp4',
    // A file row's bytes never change, so its id names them.
    etag: `"${video.file_id}"`,
    filename: videoFilename(video.id),
    disposition: 'inline',
    lastModified: video.file_created_at ? new Date(video.file_created_at) : undefined,
  });
};
