import type { RequestHandler } from 'express';

import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toTaskDto } from '../../../shared/tasks/dto.ts';
import type { AppDeps } from '../../deps.ts';

/** GET /tasks/{taskId}: a task of another workspace is not_found. */
export function getTask({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const taskId = req.params.taskId as string;
    const task = await findWorkspaceTask(pool, req.principal!.workspaceId, taskId);
    if (!task) throw errors.notFound('task', taskId);
    res.json({ task: toTaskDto(task) });
  };
}
