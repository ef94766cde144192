import type { RequestHandler } from 'express';

import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { createFixtureVideo } from '../../../shared/videos/fixtureVideo.ts';
import { startVideoJob } from '../../../shared/videos/videoJob.ts';
import { type VideoBody, videoRequest } from '../../../shared/videos/videoRequest.ts';
import { resolveProject } from '../../auth/resolveProject.ts';
import type { AppDeps } from '../../deps.ts';

/**
 * POST /videos: a video on a task of the caller's workspace, generating, and the job that renders
 * it, created with its credit hold (the requested length's maximum cost) and the Idempotency-Key
 * record in one transaction; 202 with the job to poll. A test key gets a ready fixture at no cost.
 */
export function postVideos(deps: AppDeps): RequestHandler {
  const videoDeps = { ...deps, prices: deps.config.prices };
  return async (req, res) => {
    const body = req.body as VideoBody;
    const principal = req.principal!;
    const projectId = resolveProject(req);
    const task = await findWorkspaceTask(deps.pool, principal.workspaceId, body.taskId);
    if (!task) throw errors.notFound('task', body.taskId);
    const input = videoRequest(body, newId('vid'), principal.memberId);
    const at = { workspaceId: principal.workspaceId, taskId: task.id, projectId };
    const {
      status,
      body: created,
      location,
    } = principal.livemode
      ? await startVideoJob(videoDeps, req, at, input)
      : await createFixtureVideo(deps, req, at, input);
    if (location !== null) res.location(location);
    res.status(status).json(created);
  };
}
