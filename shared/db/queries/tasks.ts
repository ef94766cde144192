import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const taskRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  project_id: z.string().nullable(),
  title: z.string(),
  assignee_staff_id: z.string().nullable(),
  workflow_id: z.string().nullable(),
  workflow_values: z.record(z.string(), z.unknown()).nullable(),
  last_message_seq: z.number(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type TaskRow = z.infer<typeof taskRow>;

const columns = sql.fragment`
  id, workspace_id, project_id, title, assignee_staff_id, workflow_id, workflow_values, last_message_seq,
  created_at, updated_at
`;

export type NewTask = {
  id: string;
  workspaceId: string;
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
  return db.maybeOne(sql.type(taskRow)`
    select ${columns} from tasks where id = ${taskId} and workspace_id = ${workspaceId}
  `);
}
