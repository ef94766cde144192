import { apiBasePath } from '../../../shared/config/config.ts';
import { findActiveStaffMember } from '../../../shared/db/queries/staff.ts';
import { errors } from '../../../shared/errors/appError.ts';
import { titleFromInput, toTaskDto } from '../../../shared/tasks/dto.ts';
import { createTaskWithMessage, resolveFileIds } from '../../../shared/tasks/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { acceptedWork } from '../../pipeline/acceptedWork.ts';

type CreateTaskBody = {
  input: string;
  title?: string;
  staffId?: string;
  fileIds?: string[];
  projectId?: string;
};

/** POST /tasks: the task, its first message and the reply job in one transaction; 202 with the task. */
export function createTask({ idempotency }: AppDeps) {
  return acceptedWork(idempotency, async (tx, actor, call) => {
    const body = call.body as CreateTaskBody;
    const staff =
      body.staffId === undefined ? null : await findActiveStaffMember(tx, actor.workspaceId, body.staffId);
    if (body.staffId !== undefined && !staff) throw errors.notFound('staff member', body.staffId);
    const fileIds = await resolveFileIds(tx, actor.workspaceId, body.fileIds);
    const title = body.title?.trim() ? body.title.trim() : titleFromInput(body.input);
    const { task } = await createTaskWithMessage(tx, {
      actor,
      title,
      text: body.input,
      fileIds,
      assigneeStaffId: staff?.id ?? null,
    });
    return { body: { task: toTaskDto(task) }, location: `${apiBasePath}/tasks/${task.id}` };
  });
}
