import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { findInWorkspace, type NewWorkspaceRecord, workspaceRecord } from './workspaceRows.ts';

const workflowRow = workspaceRecord.extend({
  name: z.string(),
  prompt_template: z.string(),
  fields: z.array(z.unknown()),
  suggested_staff_id: z.string().nullable(),
  created_at: isoTimestamp,
});
export type WorkflowRow = z.infer<typeof workflowRow>;

const columns = sql.fragment`id, workspace_id, name, prompt_template, fields, suggested_staff_id, created_at`;

export type NewWorkflow = NewWorkspaceRecord & {
  name: string;
  promptTemplate: string;
  fields: unknown[];
  suggestedStaffId: string | null;
};

export function insertWorkflow(db: Db, w: NewWorkflow) {
  return db.one(sql.type(workflowRow)`
    insert into workflows (id, workspace_id, name, prompt_template, fields, suggested_staff_id)
    values (${w.id}, ${w.workspaceId}, ${w.name}, ${w.promptTemplate}, ${sql.jsonb(w.fields as never)},
            ${w.suggestedStaffId})
    returning ${columns}
  `);
}

export function findWorkspaceWorkflow(db: Db, workspaceId: string, workflowId: string) {
  return findInWorkspace(db, { name: 'workflows', row: workflowRow, columns }, workspaceId, workflowId);
}

/** Every workflow of the workspace, newest first (each is offered as an MCP prompt). */
export function listWorkspaceWorkflows(db: Db, workspaceId: string) {
  return db.any(sql.type(workflowRow)`
    select ${columns} from workflows where workspace_id = ${workspaceId}
    order by created_at desc, id desc
    limit 500
  `);
}

/**
 * Distinct text values earlier runs of the workflow gave field `key`, starting with `prefix`, most
 * recent first (completion of a workflow argument from previous values).
 */
export function listPreviousWorkflowValues(
  db: Db,
  input: { workspaceId: string; workflowId: string; key: string; prefix: string; limit: number },
) {
  return db.anyFirst(sql.type(z.object({ value: z.string() }))`
    select value from (
      select t.workflow_values ->> ${input.key} as value, max(t.created_at) as last_used
      from tasks t
      where t.workspace_id = ${input.workspaceId} and t.workflow_id = ${input.workflowId}
        and jsonb_typeof(t.workflow_values -> ${input.key}) in ('string', 'number')
      group by 1
    ) v
    where starts_with(lower(value), lower(${input.prefix}))
    order by last_used desc, value
    limit ${input.limit}
  `);
}
