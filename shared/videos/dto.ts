import type { VideoRow } from '../db/queries/videos.ts';
import { titleFromInput } from '../tasks/dto.ts';

/** The public video record (spec "Video"). */
export function toVideoDto(video: VideoRow) {
  return {
    id: video.id,
    taskId: video.task_id,
    title: video.title,
    status: video.status,
    error: video.error,
    aspectRatio: video.aspect_ratio,
    resolution: video.resolution,
    durationSeconds: video.duration_seconds,
    createdAt: video.created_at,
    updatedAt: video.updated_at,
  };
}

/** A video is titled after its prompt, as a task is after its input. */
export function videoTitle(prompt: string): string {
  return prompt.trim() === '' ? 'Untitled video' : titleFromInput(prompt);
}

/** Where a video's bytes live: one object per video, so a retried render overwrites its own. */
export function videoObjectKey(workspaceId: string, videoId: string): string {
  return `videos/${workspaceId}/${videoId}.mp4`;
}

/** The download's filename. */
export function videoFilename(videoId: string): string {
  return `${videoId}.mp4`;
}
