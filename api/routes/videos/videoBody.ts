import type { VideoJobInput } from '../../../shared/generationJobs.ts';

/** POST /videos body; its shape is enforced by the OpenAPI validator. */
export type VideoBody = {
  taskId: string;
  prompt: string;
  negativePrompt?: string;
  aspectRatio?: '16:9' | '9:16';
  resolution?: '720p' | '1080p';
  durationSeconds?: number;
  projectId?: string;
};

/** The spec leaves the duration's default open: five seconds, a short clip. */
export const defaultVideoSeconds = 5;

/** What the render needs, with the defaults filled in (16:9, 720p, five seconds). */
export function videoRequest(body: VideoBody, videoId: string, memberId: string): VideoJobInput {
  return {
    videoId,
    prompt: body.prompt,
    ...(body.negativePrompt === undefined ? {} : { negativePrompt: body.negativePrompt }),
    aspectRatio: body.aspectRatio ?? '16:9',
    resolution: body.resolution ?? '720p',
    durationSeconds: body.durationSeconds ?? defaultVideoSeconds,
    memberId,
  };
}
