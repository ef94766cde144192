import { apiBasePath } from '../../../shared/config/config.ts';
import { findWorkspaceWorkflow } from '../../../shared/db/queries/workflows.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toTaskDto } from '../../../shared/tasks/dto.ts';
import { createTaskWithMessage } from '../../../shared/tasks/messages.ts';
import { prepareWorkflowRun } from '../../../shared/workflows/prepareRun.ts';
import { actorOf } from '../../auth/actor.ts';
import type { AppDeps } from '../../deps.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

type RunWorkflowBody = { values: Record<string, unknown>; projectId?: string };

/** POST /workflows/{workflowId}/run: validated values → a task assigned to the suggested staff member. */
export function runWorkflow({ idempotency }: AppDeps) {
  return async (call: OperationCall): Promise<Answer> => {
    const workflowId = call.params.workflowId!;
    const body = call.body as RunWorkflowBody;
    const actor = actorOf(call);
    const answer = await idempotency.commitAnswer(call, 202, async (tx) => {
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
    return { status: 202, ...answer };
  };
}
