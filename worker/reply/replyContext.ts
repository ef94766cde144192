import { findWorkspaceStaffMember } from '../../shared/db/queries/staff.ts';
import { findTaskMessage, listConversation, listMessageFiles } from '../../shared/db/queries/taskMessages.ts';
import { findWorkspaceTask, type TaskRow } from '../../shared/db/queries/tasks.ts';
import { findWorkspaceWorkflow } from '../../shared/db/queries/workflows.ts';
import type { Db } from '../../shared/db/sql.ts';
import type { ReplyJobInput } from '../../shared/tasks/messages.ts';
import type { ReplyContext } from './conversation.ts';

/** How much history a reply sees: the most recent messages up to the one it answers... */
export const conversationWindow = 50;
/** ...and at most this many characters of them (about 50k tokens), the answered message always kept. */
export const conversationCharBudget = 200_000;

/** The newest messages that fit the budget, oldest first; the last one is kept whatever its size. */
export function withinBudget<T extends { text: string }>(messages: readonly T[], budget: number): T[] {
  const kept: T[] = [];
  let used = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (kept.length > 0 && used + message.text.length > budget) break;
    used += message.text.length;
    kept.unshift(message);
  }
  return kept;
}

/**
 * Everything a reply is generated from, read only within the job's workspace: a task, message,
 * staff member or workflow of another workspace reads as absent. Null when the task or the message
 * to answer no longer exists.
 */
export async function loadReplyContext(
  db: Db,
  workspaceId: string,
  input: ReplyJobInput,
): Promise<(ReplyContext & { task: TaskRow }) | null> {
  const task = await findWorkspaceTask(db, workspaceId, input.taskId);
  const message = task && (await findTaskMessage(db, workspaceId, input.messageId));
  if (!task || !message || message.task_id !== task.id) return null;
  const [staff, workflow, messages] = await Promise.all([
    input.staffId === null ? null : findWorkspaceStaffMember(db, workspaceId, input.staffId),
    task.workflow_id === null ? null : findWorkspaceWorkflow(db, workspaceId, task.workflow_id),
    listConversation(db, workspaceId, task.id, message.seq, conversationWindow),
  ]);
  const recent = withinBudget(messages, conversationCharBudget);
  const files = await listMessageFiles(
    db,
    workspaceId,
    recent.filter((m) => m.role === 'user').map((m) => m.id),
  );
  return {
    task,
    staff,
    workflow,
    workflowValues: workflow ? task.workflow_values : null,
    messages: recent,
    files: [...files],
  };
}
