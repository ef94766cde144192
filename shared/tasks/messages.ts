import { z } from 'zod';

import { findWorkspaceFileIds } from '../db/queries/files.ts';
import type { JobRow } from '../db/queries/jobs.ts';
import {
  insertTaskMessage,
  insertTaskMessageFiles,
  type NewTaskMessage,
  type TaskMessageRow,
} from '../db/queries/taskMessages.ts';
import { insertTask, type TaskRow } from '../db/queries/tasks.ts';
import type { Db } from '../db/sql.ts';
import { errors } from '../errors/appError.ts';
import { recordEvent } from '../events/recordEvent.ts';
import { createJob } from '../jobs/createJob.ts';
import { newId } from '../primitives/ids.ts';
import { toMessageDto } from './dto.ts';

/** Who adds work to a task: the credential's workspace, the project its replies are metered against. */
export type Actor = {
  workspaceId: string;
  projectId: string;
  keyId: string | null;
  /** The OAuth app of a call made with an access token. */
  oauthAppId?: string | null;
  livemode: boolean;
  requestId: string | null;
};

/** Input of a `task.reply` job: the user message to answer and who answers it (null: the workspace assistant). */
export const replyJobInput = z.object({
  taskId: z.string(),
  messageId: z.string(),
  staffId: z.string().nullable(),
});
export type ReplyJobInput = z.infer<typeof replyJobInput>;

/**
 * Appends a message and records `task.message.created` in the caller's transaction. Every message
 * emits the event, the requester's own included (as Stripe emits `*.created` for objects created
 * through the API); `data.message.role` tells replies apart.
 * Returns null when the task is not in the workspace or the job already wrote its reply.
 */
export async function appendMessage(
  tx: Db,
  message: NewTaskMessage & { projectId: string | null },
): Promise<TaskMessageRow | null> {
  const { projectId, ...row } = message;
  const inserted = await insertTaskMessage(tx, row);
  if (inserted) {
    await recordEvent(tx, {
      workspaceId: inserted.workspace_id,
      projectId,
      type: 'task.message.created',
      data: { taskId: inserted.task_id, message: toMessageDto(inserted) },
    });
  }
  return inserted;
}

/**
 * The distinct file ids, all of them files of the workspace.
 * @throws AppError not_found naming the first id that is not a file of the workspace.
 */
export async function resolveFileIds(
  db: Db,
  workspaceId: string,
  fileIds: readonly string[] | undefined,
): Promise<string[]> {
  const unique = [...new Set(fileIds ?? [])];
  if (unique.length === 0) return [];
  const found = new Set(await findWorkspaceFileIds(db, workspaceId, unique));
  const missing = unique.find((id) => !found.has(id));
  if (missing !== undefined) throw errors.notFound('file', missing);
  return unique;
}

/**
 * Adds a user message with its files and the job that replies to it, in the caller's transaction:
 * the reply job exists iff the message commits. The reply runs once the replies to the task's
 * earlier messages have ended (one at a time, in message order; see createJob's `turn`).
 * @throws AppError not_found when the task is not in the actor's workspace.
 */
export async function submitUserMessage(
  tx: Db,
  input: { actor: Actor; taskId: string; text: string; fileIds: string[]; replyStaffId: string | null },
): Promise<{ message: TaskMessageRow; job: JobRow }> {
  const { actor } = input;
  const message = await appendMessage(tx, {
    id: newId('msg'),
    workspaceId: actor.workspaceId,
    taskId: input.taskId,
    role: 'user',
    text: input.text,
    projectId: actor.projectId,
  });
  if (!message) throw errors.notFound('task', input.taskId);
  await insertTaskMessageFiles(tx, actor.workspaceId, message.id, input.fileIds);
  const job = await createJob(
    tx,
    {
      type: 'task.reply',
      workspaceId: actor.workspaceId,
      projectId: actor.projectId,
      keyId: actor.keyId,
      oauthAppId: actor.oauthAppId ?? null,
      livemode: actor.livemode,
      input: {
        taskId: input.taskId,
        messageId: message.id,
        staffId: input.replyStaffId,
      } satisfies ReplyJobInput,
      holdId: null,
      requestId: actor.requestId,
    },
    // Replies to one task run one at a time, in message order: this one waits for the earlier ones.
    { turn: { taskId: input.taskId, messageSeq: message.seq } },
  );
  return { message, job };
}

/** Creates a task, its first user message and the reply job in the caller's transaction. */
export async function createTaskWithMessage(
  tx: Db,
  input: {
    actor: Actor;
    title: string;
    text: string;
    fileIds: string[];
    assigneeStaffId: string | null;
    workflowId?: string | null;
    workflowValues?: Record<string, unknown> | null;
  },
): Promise<{ task: TaskRow; message: TaskMessageRow }> {
  const task = await insertTask(tx, {
    id: newId('task'),
    workspaceId: input.actor.workspaceId,
    projectId: input.actor.projectId,
    title: input.title,
    assigneeStaffId: input.assigneeStaffId,
    workflowId: input.workflowId ?? null,
    workflowValues: input.workflowValues ?? null,
  });
  const { message } = await submitUserMessage(tx, {
    actor: input.actor,
    taskId: task.id,
    text: input.text,
    fileIds: input.fileIds,
    replyStaffId: input.assigneeStaffId,
  });
  // Numbering the message moved the task's updated_at to the message's time (insertTaskMessage).
  return { task: { ...task, last_message_seq: message.seq, updated_at: message.created_at }, message };
}
