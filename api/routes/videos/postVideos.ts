import type { RequestHandler } from 'express';

import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { insertVideo, type VideoRow } from '../../../shared/db/queries/videos.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { newId } from '../../../shared/ids.ts';
import { videoCost } from '../../../shared/prices.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';
import { startBilledJob } from '../../jobs/billedJob.ts';
import { answerFixtureVideo } from './fixtureVideo.ts';
import { newVideo, videoAnswer, type VideoBody, videoRequest } from './videoBody.ts';

/**
 * POST /videos: a video on a task of the caller's workspace, generating, and the job that renders
 * it, created with its credit hold (the requested length's maximum cost) and the Idempotency-Key
 * record in one transaction; 202 with the job to poll. A test key gets a ready fixture at no cost.
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
    const at = { workspaceId: principal.workspaceId, taskId: task.id, projectId };
    if (!principal.livemode) return answerFixtureVideo(deps, req, res, at, input);
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
          video = await insertVideo(tx, newVideo(input, { ...at, jobId: created.id, livemode: true }));
        },
      },
      (created) => videoAnswer(video!, created),
    );
    const { status, body: created, location } = videoAnswer(video!, job);
    res.status(status).location(location).json(created);
  };
}
