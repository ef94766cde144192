import { apiBasePath } from '../../../shared/config/config.ts';
import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { toMessageDto } from '../../../shared/tasks/dto.ts';
import { resolveFileIds, submitUserMessage } from '../../../shared/tasks/messages.ts';
import { actorOf } from '../../auth/actor.ts';
import type { AppDeps } from '../../deps.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

type SendMessageBody = { input: string; fileIds?: string[]; projectId?: string };

/** POST /tasks/{taskId}/messages: the message and its reply job in one transaction; the task's assignee replies. */
export function sendTaskMessage({ idempotency }: AppDeps) {
  return async (call: OperationCall): Promise<Answer> => {
    const taskId = call.params.taskId!;
    const body = call.body as SendMessageBody;
    const actor = actorOf(call);
    const answer = await idempotency.commitAnswer(call, 202, async (tx) => {
      const task = await findWorkspaceTask(tx, actor.workspaceId, taskId);
      if (!task) throw errors.notFound('task', taskId);
      const fileIds = await resolveFileIds(tx, actor.workspaceId, body.fileIds);
      const sent = await submitUserMessage(tx, {
        actor,
        taskId: task.id,
        text: body.input,
        fileIds,
        replyStaffId: task.assignee_staff_id,
      });
      return {
        body: { message: toMessageDto(sent.message) },
        location: `${apiBasePath}/tasks/${taskId}/messages`,
      };
    });
    return { status: 202, ...answer };
  };
}
