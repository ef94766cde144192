import type { Request } from 'express';

import { insertFile } from '../../../shared/db/queries/files.ts';
import { insertFinishedJob, type JobRow } from '../../../shared/db/queries/jobs.ts';
import { insertVideo, markVideoReady, type VideoRow } from '../../../shared/db/queries/videos.ts';
import { addStorageUsed } from '../../../shared/db/queries/workspaces.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events.ts';
import type { VideoJobInput } from '../../../shared/generationJobs.ts';
import { newId } from '../../../shared/ids.ts';
import { settleUsage } from '../../../shared/metering.ts';
import { toVideoDto, videoFilename, videoTitle } from '../../../shared/videos/dto.ts';
import { fixtureVideoSeconds } from '../../../shared/videos/fixture.ts';

/**
 * A test key's video (spec: a ready fixture, nothing rendered): the fixture clip, already stored
 * under `objectKey` by the caller, becomes the video's file, and its job is born succeeded, settled
 * at zero and announced like a rendered one (job.succeeded, video.ready), all in the caller's
 * transaction.
 */
export async function createFixtureVideo(
  tx: Db,
  req: Request,
  projectId: string,
  input: VideoJobInput & { taskId: string },
  stored: { objectKey: string; sizeBytes: number },
): Promise<{ video: VideoRow; job: JobRow }> {
  const principal = req.principal!;
  const { taskId, ...jobInput } = input;
  const result = { videoId: input.videoId };
  const job = await insertFinishedJob(tx, {
    id: newId('job'),
    workspaceId: principal.workspaceId,
    projectId,
    keyId: principal.keyId,
    type: 'video.generate',
    livemode: false,
    input: jobInput,
    holdId: null,
    requestId: req.requestId,
    result,
  });
  await insertVideo(tx, {
    id: input.videoId,
    workspaceId: principal.workspaceId,
    taskId,
    projectId,
    jobId: job.id,
    title: videoTitle(input.prompt),
    prompt: input.prompt,
    negativePrompt: input.negativePrompt ?? null,
    aspectRatio: input.aspectRatio,
    resolution: input.resolution,
    requestedDurationSeconds: input.durationSeconds,
    livemode: false,
  });
  const file = await insertFile(tx, {
    id: newId('file'),
    workspaceId: principal.workspaceId,
    memberId: principal.memberId,
    filename: videoFilename(input.videoId),
    mimeType: 'video/mp4',
    sizeBytes: stored.sizeBytes,
    kind: 'video',
    storageKey: stored.objectKey,
    taskId,
  });
  const video = (await markVideoReady(tx, {
    videoId: input.videoId,
    fileId: file.id,
    durationSeconds: fixtureVideoSeconds,
  }))!;
  await addStorageUsed(tx, principal.workspaceId, stored.sizeBytes);
  await settleUsage(tx, {
    holdId: null,
    jobId: job.id,
    workspaceId: principal.workspaceId,
    projectId,
    keyId: principal.keyId,
    operation: 'video.generate',
    livemode: false,
    usage: { seconds: fixtureVideoSeconds },
    costMinor: 0,
    currency: principal.currency,
    requestId: req.requestId,
  });
  await recordEvent(tx, {
    workspaceId: principal.workspaceId,
    projectId,
    type: 'job.succeeded',
    data: { job: { id: job.id, type: job.type, status: job.status, result } },
  });
  await recordEvent(tx, {
    workspaceId: principal.workspaceId,
    projectId,
    type: 'video.ready',
    data: { video: toVideoDto(video) },
  });
  return { video, job };
}
