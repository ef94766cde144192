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
