import type { StaffRow } from '../db/queries/staff.ts';
import type { TaskMessageRow } from '../db/queries/taskMessages.ts';
import type { TaskRow } from '../db/queries/tasks.ts';

/** The public task record (spec "Task"). A task has at most one assignee today; the field is a list. */
export function toTaskDto(task: TaskRow) {
  return {
    id: task.id,
    title: task.title,
    assigneeStaffIds: task.assignee_staff_id === null ? [] : [task.assignee_staff_id],
    createdAt: task.created_at,
    updatedAt: task.updated_at,
  };
}

/** The trigger's response carries the task without its assignees (spec POST /staff/{address}/trigger). */
export function toTriggeredTaskDto(task: TaskRow) {
  return { id: task.id, title: task.title, createdAt: task.created_at, updatedAt: task.updated_at };
}

/** The public message record (spec "Message"). A failed reply is an assistant message saying why. */
export function toMessageDto(message: TaskMessageRow) {
  return { id: message.id, role: message.role, text: message.text, createdAt: message.created_at };
}

/** The public staff record (spec "Staff member"): no address while the API channel is off. */
export function toStaffDto(staff: StaffRow) {
  return {
    id: staff.id,
    name: staff.name,
    role: staff.role,
    status: staff.status,
    apiAddress: staff.api_channel_enabled ? staff.api_address : null,
  };
}

/** A title from the input when none is given: its first non-empty line, cut to 80 characters. */
export function titleFromInput(input: string): string {
  const line =
    input
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? 'Untitled task';
  const chars = [...line];
  return chars.length > 80 ? `${chars.slice(0, 79).join('')}…` : line;
}
