import type { AspectRatio, NewVideo, Resolution } from '../db/queries/videos.ts';
import type { VideoJobInput } from '../jobs/generationInputs.ts';
import { videoTitle } from './dto.ts';

/** POST /videos body; its shape is enforced by the OpenAPI validator. */
export type VideoBody = {
  taskId: string;
  prompt: string;
  negativePrompt?: string;
  aspectRatio?: AspectRatio;
  resolution?: Resolution;
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

/** The video row of a request, generating. */
export function newVideo(
  input: VideoJobInput,
  at: { workspaceId: string; taskId: string; projectId: string; jobId: string; livemode: boolean },
): NewVideo {
  return {
    id: input.videoId,
    ...at,
    title: videoTitle(input.prompt),
    prompt: input.prompt,
    negativePrompt: input.negativePrompt ?? null,
    aspectRatio: input.aspectRatio,
    resolution: input.resolution,
    requestedDurationSeconds: input.durationSeconds,
  };
}
