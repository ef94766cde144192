import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

export const messageRole = z.enum(['user', 'assistant']);
export type MessageRole = z.infer<typeof messageRole>;

const messageRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  task_id: z.string(),
  seq: z.number(),
  role: messageRole,
  text: z.string(),
  status: z.enum(['completed', 'failed']),
  error_code: z.string().nullable(),
  staff_id: z.string().nullable(),
  job_id: z.string().nullable(),
  created_at: isoTimestamp,
});
export type TaskMessageRow = z.infer<typeof messageRow>;

const columns = sql.fragment`id, workspace_id, task_id, seq, role, text, status, error_code, staff_id, job_id, created_at`;

export type NewTaskMessage = {
  id: string;
  workspaceId: string;
  taskId: string;
  role: MessageRole;
  text: string;
  status?: 'completed' | 'failed';
  errorCode?: string | null;
  staffId?: string | null;
  jobId?: string | null;
};

/**
 * Appends a message with the task's next number. The update holds the task row's lock until the
 * transaction ends, so messages of one task commit in number order (see the migration). Returns
 * null when the task is not in the workspace, or when this job already wrote its reply.
 *
 * The message's time is taken with its number, under that lock: the clock's time then, and never
 * before the previous message's (kept in the task's updated_at), so createdAt never contradicts the
 * listing order. now() would be the transaction's start: a transaction that began first but waited
 * (for the lock, for an Idempotency-Key) was numbered after a later one yet dated before it.
 */
export function insertTaskMessage(db: Db, m: NewTaskMessage) {
  return db.maybeOne(sql.type(messageRow)`
    with next as (
      update tasks
      set last_message_seq = last_message_seq + 1, updated_at = greatest(clock_timestamp(), updated_at)
      where id = ${m.taskId} and workspace_id = ${m.workspaceId}
      returning last_message_seq, updated_at
    )
    insert into task_messages (id, workspace_id, task_id, seq, role, text, status, error_code, staff_id, job_id,
                               created_at)
    select ${m.id}, ${m.workspaceId}, ${m.taskId}, next.last_message_seq, ${m.role}, ${m.text},
           ${m.status ?? 'completed'}, ${m.errorCode ?? null}, ${m.staffId ?? null}, ${m.jobId ?? null},
           next.updated_at
    from next
    on conflict (job_id) do nothing
    returning ${columns}
  `);
}

/** One page, oldest first: messages numbered after `afterSeq`. */
export function listTaskMessages(db: Db, taskId: string, afterSeq: number, limit: number) {
  return db.any(sql.type(messageRow)`
    select ${columns} from task_messages
    where task_id = ${taskId} and seq > ${afterSeq}
    order by seq
    limit ${limit}
  `);
}

/** Assistant replies (completed or failed) after `afterSeq`, oldest first. */
export function listRepliesAfter(db: Db, taskId: string, afterSeq: number, limit: number) {
  return db.any(sql.type(messageRow)`
    select ${columns} from task_messages
    where task_id = ${taskId} and seq > ${afterSeq} and role = 'assistant'
    order by seq
    limit ${limit}
  `);
}

/** The same for many tasks at once (one round trip after the listen connection came back). */
export function listRepliesAfterEach(
  db: Db,
  cursors: { taskId: string; afterSeq: number }[],
  limitPerTask: number,
) {
  return db.any(sql.type(messageRow)`
    select m.id, m.workspace_id, m.task_id, m.seq, m.role, m.text, m.status, m.error_code, m.staff_id, m.job_id,
           m.created_at
    from unnest(${sql.array(
      cursors.map((c) => c.taskId),
      'text',
    )}, ${sql.array(
      cursors.map((c) => c.afterSeq),
      'int8',
    )}) as c(task_id, after_seq)
    cross join lateral (
      select * from task_messages t
      where t.task_id = c.task_id and t.seq > c.after_seq and t.role = 'assistant'
      order by t.seq
      limit ${limitPerTask}
    ) m
    order by m.task_id, m.seq
  `);
}

/** The conversation a reply answers: the last `limit` completed messages up to and including `uptoSeq`. */
export function listConversation(
  db: Db,
  workspaceId: string,
  taskId: string,
  uptoSeq: number,
  limit: number,
) {
  return db.any(sql.type(messageRow)`
    select ${columns} from (
      select ${columns} from task_messages
      where workspace_id = ${workspaceId} and task_id = ${taskId} and seq <= ${uptoSeq} and status = 'completed'
      order by seq desc
      limit ${limit}
    ) recent
    order by seq
  `);
}

export function findTaskMessage(db: Db, workspaceId: string, messageId: string) {
  return db.maybeOne(sql.type(messageRow)`
    select ${columns} from task_messages where id = ${messageId} and workspace_id = ${workspaceId}
  `);
}

/** The reply a job already wrote, if any (a job that crashed after committing it must not write another). */
export function findReplyOfJob(db: Db, jobId: string) {
  return db.maybeOne(sql.type(messageRow)`select ${columns} from task_messages where job_id = ${jobId}`);
}

/** Attaches files; the composite foreign keys refuse files of another workspace. */
export async function insertTaskMessageFiles(
  db: Db,
  workspaceId: string,
  messageId: string,
  fileIds: string[],
) {
  if (fileIds.length === 0) return;
  await db.query(sql.typeAlias('void')`
    insert into task_message_files (workspace_id, message_id, file_id)
    select ${workspaceId}, ${messageId}, f from unnest(${sql.array(fileIds, 'text')}) as f
    on conflict do nothing
  `);
}

const attachedFileRow = z.object({
  message_id: z.string(),
  file_id: z.string(),
  filename: z.string(),
  mime_type: z.string(),
  size_bytes: z.number(),
  kind: z.string(),
});
export type AttachedFileRow = z.infer<typeof attachedFileRow>;

export function listMessageFiles(db: Db, workspaceId: string, messageIds: string[]) {
  if (messageIds.length === 0) return Promise.resolve([] as readonly AttachedFileRow[]);
  return db.any(sql.type(attachedFileRow)`
    select a.message_id, f.id as file_id, f.filename, f.mime_type, f.size_bytes, f.kind
    from task_message_files a join files f on f.id = a.file_id and f.workspace_id = a.workspace_id
    where a.workspace_id = ${workspaceId} and a.message_id = any(${sql.array(messageIds, 'text')})
    order by a.message_id, f.filename
  `);
}
