import type { RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config.ts';
import type { JobRow } from '../../../shared/db/queries/jobs.ts';
import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { insertVideo, type VideoRow } from '../../../shared/db/queries/videos.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { newId } from '../../../shared/ids.ts';
import { videoCost } from '../../../shared/prices.ts';
import { toVideoDto, videoObjectKey, videoTitle } from '../../../shared/videos/dto.ts';
import { fixtureVideo } from '../../../shared/videos/fixture.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { startBilledJob } from '../generation/billedJob.ts';
import { createFixtureVideo } from './fixtureVideo.ts';
import { type VideoBody, videoRequest } from './videoBody.ts';

const answer = (video: VideoRow, job: JobRow) => ({
  status: 202,
  body: { video: toVideoDto(video), jobId: job.id },
  location: `${apiBasePath}/jobs/${job.id}`,
});

/**
 * POST /videos: a video on a task of the caller's workspace, generating, and the job that renders
 * it, created with its credit hold (the requested length's maximum cost) in one transaction; 202
 * with the job to poll. A test key gets a ready fixture at no cost.
 */
export function postVideos(deps: AppDeps): RequestHandler {
  const { prices } = deps.config;
  return async (req, res) => {
    const body = req.body as VideoBody;
    const principal = req.principal!;
    const projectId = resolveProject(req);
    const task = await findWorkspaceTask(deps.pool, principal.workspaceId, body.taskId);
    if (!task) throw errors.notFound('task', body.taskId);
    const input = videoRequest(body, newId('vid'), principal.memberId);
    if (!principal.livemode) {
      const bytes = await fixtureVideo(input.aspectRatio, input.resolution);
      const objectKey = videoObjectKey(principal.workspaceId, input.videoId);
      await deps.objectStore.put(objectKey, bytes, bytes.length, 'video/mp4');
      try {
        await deps.idempotency.answerFromTransaction(req, res, 202, async (tx) => {
          const made = await createFixtureVideo(
            tx,
            req,
            projectId,
            { ...input, taskId: task.id },
            {
              objectKey,
              sizeBytes: bytes.length,
            },
          );
          return answer(made.video, made.job);
        });
      } catch (error) {
        await deps.objectStore.remove(objectKey).catch(() => {});
        throw error;
      }
      return;
    }
    let video: VideoRow | undefined;
    const job = await startBilledJob(
      deps,
      req,
      {
        type: 'video.generate',
        projectId,
        input,
        maxCostMinor: videoCost(prices, input.durationSeconds),
        alsoWrite: async (tx, created) => {
          video = await insertVideo(tx, {
            id: input.videoId,
            workspaceId: principal.workspaceId,
            taskId: task.id,
            projectId,
            jobId: created.id,
            title: videoTitle(input.prompt),
            prompt: input.prompt,
            negativePrompt: input.negativePrompt ?? null,
            aspectRatio: input.aspectRatio,
            resolution: input.resolution,
            requestedDurationSeconds: input.durationSeconds,
            livemode: true,
          });
        },
      },
      (created) => answer(video!, created),
    );
    const { status, body: created, location } = answer(video!, job);
    res.status(status).location(location).json(created);
  };
}
