import type { Request, Response } from 'express';

import { insertFile } from '../../shared/db/queries/files.ts';
import { insertVideo, markVideoReady } from '../../shared/db/queries/videos.ts';
import { addStorageUsed } from '../../shared/db/queries/workspaces.ts';
import type { Db } from '../../shared/db/sql.ts';
import { recordEvent } from '../../shared/events/recordEvent.ts';
import type { VideoJobInput } from '../../shared/jobs/generationInputs.ts';
import { newId } from '../../shared/primitives/ids.ts';
import type { ObjectStore } from '../../shared/storage/objectStore.ts';
import { toVideoDto, videoFilename, videoObjectKey } from '../../shared/videos/dto.ts';
import { fixtureVideo, fixtureVideoSeconds } from '../../shared/videos/fixture.ts';
import { newVideo } from '../../shared/videos/videoRequest.ts';
import type { RequestIdempotency } from '../idempotency/requestIdempotency.ts';
import { finishFixtureJob, insertFixtureJob } from './fixtureJob.ts';
import { videoAnswer } from './videoJob.ts';

type Stored = { objectKey: string; sizeBytes: number };

/**
 * The rows of a test key's video, in the caller's transaction: its job born succeeded, the video with
 * the stored fixture as its file (ready), settled at zero, and announced like a rendered one
 * (job.succeeded, video.ready).
 */
async function insertFixtureVideo(
  tx: Db,
  req: Request,
  at: { projectId: string; taskId: string },
  input: VideoJobInput,
  stored: Stored,
) {
  const principal = req.principal!;
  const { projectId, taskId } = at;
  const result = { videoId: input.videoId };
  const job = await insertFixtureJob(tx, req, { type: 'video.generate', projectId, input });
  await insertVideo(
    tx,
    newVideo(input, {
      workspaceId: principal.workspaceId,
      taskId,
      projectId,
      jobId: job.id,
      livemode: false,
    }),
  );
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
  const finished = await finishFixtureJob(tx, req, job, { result, usage: { seconds: fixtureVideoSeconds } });
  const announced = { workspaceId: principal.workspaceId, projectId };
  await recordEvent(tx, { ...announced, type: 'video.ready', data: { video: toVideoDto(video) } });
  return videoAnswer(video, finished);
}

/**
 * Answers a test key's POST /videos (spec: a ready fixture, nothing rendered): the fixture clip of
 * the requested shape is stored as the video's own object (so deleting it later touches no other
 * video), then its rows are written with the Idempotency-Key record in one transaction. Bytes whose
 * rows did not commit are removed again.
 */
export async function answerFixtureVideo(
  deps: { objectStore: ObjectStore; idempotency: RequestIdempotency },
  req: Request,
  res: Response,
  at: { projectId: string; taskId: string },
  input: VideoJobInput,
): Promise<void> {
  const bytes = await fixtureVideo(input.aspectRatio, input.resolution);
  const stored = {
    objectKey: videoObjectKey(req.principal!.workspaceId, input.videoId),
    sizeBytes: bytes.length,
  };
  await deps.objectStore.put(stored.objectKey, bytes, bytes.length, 'video/mp4');
  try {
    await deps.idempotency.answerFromTransaction(req, res, 202, (tx) =>
      insertFixtureVideo(tx, req, at, input, stored),
    );
  } catch (error) {
    await deps.objectStore.remove(stored.objectKey).catch(() => {});
    throw error;
  }
}
