import { apiBasePath } from '../../../shared/config/config.ts';
import { findWorkspaceWorkflow } from '../../../shared/db/queries/workflows.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toTaskDto } from '../../../shared/tasks/dto.ts';
import { createTaskWithMessage } from '../../../shared/tasks/messages.ts';
import { prepareWorkflowRun } from '../../../shared/workflows/prepareRun.ts';
import type { AppDeps } from '../../deps.ts';
import { acceptedWork } from '../../pipeline/acceptedWork.ts';

type RunWorkflowBody = { values: Record<string, unknown>; projectId?: string };

/** POST /workflows/{workflowId}/run: validated values → a task assigned to the suggested staff member. */
export function runWorkflow({ idempotency }: AppDeps) {
  return acceptedWork(idempotency, async (tx, actor, call) => {
    const workflowId = call.params.workflowId!;
    const body = call.body as RunWorkflowBody;
    const workflow = await findWorkspaceWorkflow(tx, actor.workspaceId, workflowId);
    if (!workflow) throw errors.notFound('workflow', workflowId);
    const run = await prepareWorkflowRun(tx, actor.workspaceId, workflow, body.values);
    const { task } = await createTaskWithMessage(tx, {
      actor,
      title: run.title,
      text: run.text,
      fileIds: run.fileIds,
      assigneeStaffId: run.assigneeStaffId,
      workflowId: workflow.id,
      workflowValues: run.values,
    });
    return { body: { task: toTaskDto(task) }, location: `${apiBasePath}/tasks/${task.id}` };
  });
}
