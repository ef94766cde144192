import type { RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config.ts';
import { findWorkspaceWorkflow } from '../../../shared/db/queries/workflows.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toTaskDto } from '../../../shared/tasks/dto.ts';
import { createTaskWithMessage } from '../../../shared/tasks/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { actorFromRequest } from '../tasks/actor.ts';
import { prepareWorkflowRun } from './prepareRun.ts';

type RunWorkflowBody = { values: Record<string, unknown>; projectId?: string };

/** POST /workflows/{workflowId}/run: validated values → a task assigned to the suggested staff member. */
export function runWorkflow({ idempotency }: AppDeps): RequestHandler {
  return async (req, res) => {
    const workflowId = req.params.workflowId as string;
    const body = req.body as RunWorkflowBody;
    const actor = actorFromRequest(req);
    await idempotency.answerFromTransaction(req, res, 202, async (tx) => {
      const workflow = await findWorkspaceWorkflow(tx, actor.workspaceId, workflowId);
      if (!workflow) throw errors.notFound('workflow', workflowId);
      const run = await prepareWorkflowRun(tx, actor.workspaceId, workflow, body.values);
      const created = await createTaskWithMessage(tx, {
        actor,
        title: run.title,
        text: run.text,
        fileIds: run.fileIds,
        assigneeStaffId: run.assigneeStaffId,
        workflowId: workflow.id,
        workflowValues: run.values,
      });
      const { task } = created;
      return { body: { task: toTaskDto(task) }, location: `${apiBasePath}/tasks/${task.id}` };
    });
  };
}
