import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';
import { findInWorkspace, type NewWorkspaceRecord, workspaceRecord } from './workspaceRows.ts';

const taskRow = workspaceRecord.extend({
  project_id: z.string().nullable(),
  title: z.string(),
  assignee_staff_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  workflow_values: z.record(z.string(), z.unknown()).nullable(),
  last_message_seq: z.number(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
});
export type TaskRow = z.infer<typeof taskRow>;

const columns = sql.fragment`
  id, workspace_id, project_id, title, assignee_staff_id, workflow_id, workflow_values, last_message_seq,
  created_at, updated_at
`;

export type NewTask = NewWorkspaceRecord & {
  projectId: string;
  title: string;
  assigneeStaffId: string | null;
  workflowId: string | null;
  workflowValues: Record<string, unknown> | null;
};

export function insertTask(db: Db, t: NewTask) {
  return db.one(sql.type(taskRow)`
    insert into tasks (id, workspace_id, project_id, title, assignee_staff_id, workflow_id, workflow_values)
    values (${t.id}, ${t.workspaceId}, ${t.projectId}, ${t.title}, ${t.assigneeStaffId}, ${t.workflowId},
            ${t.workflowValues === null ? null : sql.jsonb(t.workflowValues as never)})
    returning ${columns}
  `);
}

/** The task when it belongs to the workspace; a task of another workspace reads as absent. */
export function findWorkspaceTask(db: Db, workspaceId: string, taskId: string) {
  return findInWorkspace(db, { name: 'tasks', row: taskRow, columns }, workspaceId, taskId);
}

const spendCapRow = z.object({ monthly_spend_cap_minor: z.number().nullable() });

/** The monthly cap of the key a reply is metered against (null: no cap, or not an API key). */
export function findKeySpendCap(db: Db, keyId: string): Promise<number | null> {
  return db
    .maybeOneFirst(
      sql.type(spendCapRow)`
      select monthly_spend_cap_minor from api_keys where id = ${keyId}
    `,
    )
    .then((cap) => cap ?? null);
}

/** Remembers a reply job's credit hold, so a retried attempt reuses it instead of reserving again. */
export async function attachJobHold(db: Db, jobId: string, holdId: string): Promise<void> {
  await db.query(
    sql.typeAlias('void')`update jobs set hold_id = ${holdId} where id = ${jobId} and hold_id is null`,
  );
}

const listedTaskRow = taskRow
  .pick({
    id: true,
    title: true,
    project_id: true,
    last_message_seq: true,
    created_at: true,
    updated_at: true,
  })
  .extend({
    cursor_at: cursorAtText,
    /** The newest message's status, role and time: null for a task with no message yet. */
    last_status: z.string().nullable(),
    last_role: z.string().nullable(),
    last_message_at: isoTimestamp.nullable(),
  });

/** A workspace's tasks, newest first, a page after (created_at, id): tasks_workspace_idx. */
export function listWorkspaceTasks(db: Db, workspaceId: string, page: ListPage) {
  return db.any(sql.type(listedTaskRow)`
    select id, title, project_id, last_message_seq, created_at, updated_at,
           ${cursorAt()}, last_status, last_role, last_message_at
    from tasks
    left join lateral (
      select status as last_status, role as last_role, created_at as last_message_at from task_messages
      where task_id = tasks.id order by seq desc limit 1
    ) m on true
    where workspace_id = ${workspaceId} ${afterPosition(page)}
    ${newestFirst(page)}
  `);
}

const boardItemRow = z.object({
  kind: z.enum(['video', 'file']),
  id: z.string(),
  title: z.string(),
  status: z.string(),
  mime_type: z.string().nullable(),
  size_bytes: z.number().nullable(),
  created_at: isoTimestamp,
  cursor_at: cursorAtText,
});

/**
 * A task's media board: its videos (any status) and the files attached to it that are not a video's
 * own file, newest first, one page after (created_at, id). The position bounds each branch of the
 * union, so each reads only its page from its index (videos_task_idx, files_task_idx).
 */
export function listTaskBoard(db: Db, workspaceId: string, taskId: string, page: ListPage) {
  return db.any(sql.type(boardItemRow)`
    select *, ${cursorAt()} from (
      (select 'video' as kind, v.id, v.title, v.status, f.mime_type, f.size_bytes, v.created_at
       from videos v left join files f on f.workspace_id = v.workspace_id and f.id = v.file_id
       where v.workspace_id = ${workspaceId} and v.task_id = ${taskId} ${afterPosition(page, 'v')}
       ${newestFirst(page, 'v')})
      union all
      (select 'file', f.id, f.filename, 'ready', f.mime_type, f.size_bytes, f.created_at
       from files f
       where f.workspace_id = ${workspaceId} and f.task_id = ${taskId} ${afterPosition(page, 'f')}
         and not exists (select 1 from videos v where v.workspace_id = f.workspace_id and v.file_id = f.id)
       ${newestFirst(page, 'f')})
    ) board
    ${newestFirst(page)}
  `);
}

/** Tasks whose id or title starts with `prefix` (titles case-insensitively), newest first (completion). */
export function completeWorkspaceTasks(db: Db, workspaceId: string, prefix: string, limit: number) {
  return db.any(sql.type(z.object({ id: z.string(), title: z.string() }))`
    select id, title from tasks
    where workspace_id = ${workspaceId}
      and (starts_with(id, ${prefix}) or starts_with(lower(title), lower(${prefix})))
    order by created_at desc, id desc
    limit ${limit}
  `);
}
