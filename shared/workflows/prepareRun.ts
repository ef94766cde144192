import { findWorkspaceFileIds } from '../db/queries/files.ts';
import { findActiveStaffMember } from '../db/queries/staff.ts';
import type { WorkflowRow } from '../db/queries/workflows.ts';
import type { Db } from '../db/sql.ts';
import { AppError, errors } from '../errors/appError.ts';
import { parseFieldDefinitions } from './fields.ts';
import { fillTemplate } from './template.ts';
import { checkWorkflowValues, type WorkflowValue } from './validateValues.ts';

export type PreparedRun = {
  title: string;
  /** The task's visible first message: the template filled with the values as plain text. */
  text: string;
  values: Record<string, WorkflowValue>;
  fileIds: string[];
  assigneeStaffId: string | null;
};

/**
 * Validates run values against the workflow's stored fields (file ids against the workspace's files)
 * and prepares the task it creates, assigned to the suggested staff member while that one is active.
 * @throws AppError invalid_workflow_values with one issue per offending field;
 *   internal_error when the stored definitions are unreadable.
 */
export async function prepareWorkflowRun(
  db: Db,
  workspaceId: string,
  workflow: WorkflowRow,
  rawValues: Record<string, unknown>,
): Promise<PreparedRun> {
  let fields;
  try {
    fields = parseFieldDefinitions(workflow.fields);
  } catch (error) {
    throw errors.internal('This workflow has unreadable field definitions.', error);
  }
  const check = checkWorkflowValues(fields, rawValues);
  const issues = [...check.issues];
  const fileIds = [...new Set(check.fileRefs.map((r) => r.fileId))];
  const found = new Set(await findWorkspaceFileIds(db, workspaceId, fileIds));
  for (const ref of check.fileRefs) {
    if (!found.has(ref.fileId)) {
      issues.push({ path: `values.${ref.key}`, message: `'${ref.fileId}' is not a file of this workspace` });
    }
  }
  if (issues.length > 0) {
    throw new AppError(
      'invalid_workflow_values',
      `${issues.length} workflow value${issues.length === 1 ? ' is' : 's are'} invalid: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}.`,
      { issues },
    );
  }
  const staff =
    workflow.suggested_staff_id === null
      ? null
      : await findActiveStaffMember(db, workspaceId, workflow.suggested_staff_id);
  return {
    title: workflow.name,
    text: fillTemplate(workflow.prompt_template, fields, check.values),
    values: check.values,
    fileIds: [...found],
    assigneeStaffId: staff?.id ?? null,
  };
}
