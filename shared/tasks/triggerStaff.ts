import { findTriggerableStaffMember } from '../db/queries/staff.ts';
import { findWorkspaceTask, type TaskRow } from '../db/queries/tasks.ts';
import type { Db } from '../db/sql.ts';
import { AppError, errors } from '../errors/appError.ts';
import { titleFromInput } from './dto.ts';
import { type Actor, createTaskWithMessage, submitUserMessage } from './messages.ts';

export type Trigger = { input: string; subject?: string; threadId?: string };

/**
 * Hands work to the staff member at `address`, in the caller's transaction: a new task titled by the
 * subject (or the input), or a message on an earlier task of the workspace (`threadId`). The trigger
 * itself is free; the run is billed by the reply job.
 * @throws AppError channel_route_not_found, not_found (the thread)
 */
export async function triggerStaffMember(
  tx: Db,
  actor: Actor,
  address: string,
  trigger: Trigger,
): Promise<TaskRow> {
  const staff = await findTriggerableStaffMember(tx, actor.workspaceId, address);
  if (!staff) {
    throw new AppError(
      'channel_route_not_found',
      `No staff member of this workspace answers at '${address}'.`,
    );
  }
  if (trigger.threadId !== undefined) {
    const thread = await findWorkspaceTask(tx, actor.workspaceId, trigger.threadId);
    if (!thread) throw errors.notFound('task', trigger.threadId);
    await submitUserMessage(tx, {
      actor,
      taskId: thread.id,
      text: trigger.input,
      fileIds: [],
      replyStaffId: staff.id,
    });
    // Re-read for the updated_at the new message set.
    return (await findWorkspaceTask(tx, actor.workspaceId, thread.id))!;
  }
  const title = trigger.subject?.trim() ? trigger.subject.trim() : titleFromInput(trigger.input);
  const created = await createTaskWithMessage(tx, {
    actor,
    title,
    text: trigger.input,
    fileIds: [],
    assigneeStaffId: staff.id,
  });
  return created.task;
}
