import { insertFile } from '../db/queries/files.ts';
import { insertVideo, markVideoReady } from '../db/queries/videos.ts';
import { addStorageUsed } from '../db/queries/workspaces.ts';
import type { Db } from '../db/sql.ts';
import { recordEvent } from '../events/recordEvent.ts';
import type { IdempotencyStore } from '../idempotency/idempotencyStore.ts';
import type { JobCaller } from '../jobs/billedJob.ts';
import { finishFixtureJob, insertFixtureJob } from '../jobs/fixtureJob.ts';
import type { VideoJobInput } from '../jobs/generationInputs.ts';
import { newId } from '../primitives/ids.ts';
import type { ObjectStore } from '../storage/objectStore.ts';
import { toVideoDto, videoFilename, videoObjectKey } from './dto.ts';
import { fixtureVideo, fixtureVideoSeconds } from './fixture.ts';
import { videoAnswer } from './videoJob.ts';
import { newVideo } from './videoRequest.ts';

type Stored = { objectKey: string; sizeBytes: number };

/**
 * The rows of a test key's video, in the caller's transaction: its job born succeeded, the video with
 * the stored fixture as its file (ready), settled at zero, and announced like a rendered one
 * (job.succeeded, video.ready).
 */
async function insertFixtureVideo(
  tx: Db,
  caller: JobCaller,
  at: { projectId: string; taskId: string },
  input: VideoJobInput,
  stored: Stored,
) {
  const principal = caller.principal!;
  const { projectId, taskId } = at;
  const result = { videoId: input.videoId };
  const job = await insertFixtureJob(tx, caller, { type: 'video.generate', projectId, input });
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
  const finished = await finishFixtureJob(tx, caller, job, {
    result,
    usage: { seconds: fixtureVideoSeconds },
  });
  const announced = { workspaceId: principal.workspaceId, projectId };
  await recordEvent(tx, { ...announced, type: 'video.ready', data: { video: toVideoDto(video) } });
  return videoAnswer(video, finished);
}

/**
 * A test key's POST /videos (spec: a ready fixture, nothing rendered): the fixture clip of the
 * requested shape is stored as the video's own object (so deleting it later touches no other
 * video), then its rows are written with the Idempotency-Key record in one transaction. Bytes whose
 * rows did not commit are removed again.
 */
export async function createFixtureVideo(
  deps: { objectStore: ObjectStore; idempotency: IdempotencyStore },
  caller: JobCaller,
  at: { projectId: string; taskId: string },
  input: VideoJobInput,
): Promise<{ status: number; body: unknown; location: string | null }> {
  const bytes = await fixtureVideo(input.aspectRatio, input.resolution);
  const stored = {
    objectKey: videoObjectKey(caller.principal!.workspaceId, input.videoId),
    sizeBytes: bytes.length,
  };
  await deps.objectStore.put(stored.objectKey, bytes, bytes.length, 'video/mp4');
  try {
    const answer = await deps.idempotency.commitAnswer(caller, 202, (tx) =>
      insertFixtureVideo(tx, caller, at, input, stored),
    );
    return { status: 202, ...answer };
  } catch (error) {
    await deps.objectStore.remove(stored.objectKey).catch(() => {});
    throw error;
  }
}
