import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { z } from 'zod';

import { videoCost } from '../../shared/config/prices.ts';
import { insertFile } from '../../shared/db/queries/files.ts';
import { findMember } from '../../shared/db/queries/members.ts';
import { findVideo, lockVideo, markVideoFailed, markVideoReady } from '../../shared/db/queries/videos.ts';
import { addStorageUsed } from '../../shared/db/queries/workspaces.ts';
import type { Db } from '../../shared/db/sql.ts';
import { recordEvent } from '../../shared/events/recordEvent.ts';
import type { PublicJobError } from '../../shared/jobs/finish.ts';
import { videoJobInput } from '../../shared/jobs/generationInputs.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { toVideoDto, videoFilename, videoObjectKey } from '../../shared/videos/dto.ts';
import type { WorkerContext } from '../context.ts';
import { callProvider, cancelledOutcome } from '../generationWork.ts';
import { type JobDefinition, PermanentJobError, type RunningJob } from '../jobEngine.ts';

/** What a render hands from `run` to `onSucceeded` (the job's public result is only the video id). */
const rendered = z.object({
  videoId: z.string(),
  objectKey: z.string(),
  sizeBytes: z.number().int().min(0),
  durationSeconds: z.number().int().min(1),
  mimeType: z.string(),
});
type Rendered = z.infer<typeof rendered>;

const failedMessage = 'The video could not be rendered.';
const cancelledMessage = 'The render was cancelled.';

function isMissing(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return code === 'NoSuchKey' || code === 'NotFound';
}

/**
 * The ready video's writes, in the transaction that settles the job: its file (kind video, in the
 * requester's drive, on the task's media board), the video marked ready, the workspace's storage use
 * and the video.ready event. A video that is gone (its task deleted) or already ended gets nothing:
 * afterFinished then removes the uploaded bytes.
 */
async function recordReady(tx: Db, job: RunningJob, out: Rendered, memberId: string): Promise<void> {
  const video = await lockVideo(tx, out.videoId);
  if (!video || video.status !== 'generating') return;
  const member = await findMember(tx, memberId);
  const file = await insertFile(tx, {
    id: newId('file'),
    workspaceId: video.workspace_id,
    memberId: member ? memberId : null,
    filename: videoFilename(video.id),
    mimeType: out.mimeType,
    sizeBytes: out.sizeBytes,
    kind: 'video',
    storageKey: out.objectKey,
    taskId: video.task_id,
  });
  const ready = await markVideoReady(tx, {
    videoId: video.id,
    fileId: file.id,
    durationSeconds: out.durationSeconds,
  });
  await addStorageUsed(tx, video.workspace_id, out.sizeBytes);
  await recordEvent(tx, {
    workspaceId: video.workspace_id,
    projectId: job.project_id,
    type: 'video.ready',
    data: { video: toVideoDto(ready!) },
  });
}

/**
 * POST /videos: renders the clip with the live video provider (local: ffmpeg) into a temporary file,
 * streams it to object storage and, on success, makes the video ready; billed per rendered second.
 * The temporary file is always deleted; a cancelled or stopping job kills the render (its signal).
 */
export function videoGenerate(ctx: WorkerContext): JobDefinition {
  const { prices } = ctx.config;
  return {
    run: async (job, _prepared, signal, helpers) => {
      const input = videoJobInput.parse(job.input);
      const video = await findVideo(ctx.pool, input.videoId);
      if (!video) throw new PermanentJobError('not_found', 'The video no longer exists.');
      const provider = ctx.providers(job.livemode).video;
      // Named after the video, so a leftover (a killed process) says whose it was.
      const scratch = await mkdtemp(path.join(os.tmpdir(), `svc-video-${video.id}-`));
      try {
        const outputPath = path.join(scratch, 'video.mp4');
        const out = await callProvider(helpers, signal, () =>
          provider.render({
            prompt: input.prompt,
            negativePrompt: input.negativePrompt,
            aspectRatio: input.aspectRatio,
            resolution: input.resolution,
            durationSeconds: input.durationSeconds,
            outputPath,
            signal,
          }),
        );
        if (out === 'cancelled') return cancelledOutcome;
        const { size } = await stat(outputPath);
        const objectKey = videoObjectKey(job.workspace_id, video.id);
        await ctx.objectStore.put(objectKey, createReadStream(outputPath), size, out.mimeType);
        const result: Rendered = {
          videoId: video.id,
          objectKey,
          sizeBytes: size,
          durationSeconds: out.durationSeconds,
          mimeType: out.mimeType,
        };
        return {
          result,
          usage: { seconds: out.durationSeconds },
          costMinor: job.livemode ? videoCost(prices, out.durationSeconds) : 0,
        };
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    },
    onSucceeded: async (tx, job, _prepared, outcome) => {
      const out = rendered.parse(outcome.result);
      await recordReady(tx, job, out, videoJobInput.parse(job.input).memberId);
      return { videoId: out.videoId };
    },
    onFailed: async (tx, job, error: PublicJobError) => {
      const input = videoJobInput.safeParse(job.input);
      if (!input.success) return;
      // Credit refusals say what to do about them; anything else is the render's own failure.
      const message = error.code === 'internal_error' ? failedMessage : error.message;
      await markVideoFailed(tx, input.data.videoId, message);
    },
    onCancelled: async (tx, job) => {
      const input = videoJobInput.safeParse(job.input);
      if (input.success) await markVideoFailed(tx, input.data.videoId, cancelledMessage);
    },
    afterFinished: async (job) => {
      const input = videoJobInput.safeParse(job.input);
      if (!input.success) return;
      const video = await findVideo(ctx.pool, input.data.videoId);
      // A job ended as cancelled before its work ran (onCancelled never saw it) leaves its video
      // generating: it will never be ready.
      if (video?.status === 'generating') {
        await markVideoFailed(ctx.pool, video.id, cancelledMessage);
      }
      if (video?.status === 'ready') return;
      // Bytes uploaded by a render whose video did not become ready (gone, cancelled meanwhile).
      try {
        await ctx.objectStore.remove(videoObjectKey(job.workspace_id, input.data.videoId));
      } catch (error) {
        if (!isMissing(error)) throw error;
      }
    },
  };
}
