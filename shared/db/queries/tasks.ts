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
