import { apiBasePath } from '../../../shared/config/config.ts';
import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { found } from '../../../shared/errors/appError.ts';
import { toMessageDto } from '../../../shared/tasks/dto.ts';
import { resolveFileIds, submitUserMessage } from '../../../shared/tasks/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { acceptedWork } from '../../pipeline/acceptedWork.ts';

type SendMessageBody = { input: string; fileIds?: string[]; projectId?: string };

/** POST /tasks/{taskId}/messages: the message and its reply job in one transaction; the task's assignee replies. */
export function sendTaskMessage({ idempotency }: AppDeps) {
  return acceptedWork(idempotency, async (tx, actor, call) => {
    const taskId = call.params.taskId!;
    const body = call.body as SendMessageBody;
    const task = found(await findWorkspaceTask(tx, actor.workspaceId, taskId), 'task', taskId);
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
}
