import type { DatabasePool } from 'slonik';

import { findMember } from '../shared/db/queries/members.ts';
import { workspaceExists } from '../shared/db/queries/workspaces.ts';
import { CliError, requireFlag } from './cliError.ts';
import { type Flag, requiredString } from './commandTable.ts';

/** `--workspace`, as every command that acts within one workspace takes it. */
export const workspaceFlag = requiredString('W', 'Workspace id (ws_…).');

/** `--project`, as every command that acts within one project takes it. */
export const projectFlag = requiredString('P', 'Project id (prj_…).');

/** `--member`, a member id (mem_…): `description` says who the member is to the command. */
export const memberFlag = (description: string, options: { required: boolean }): Flag => ({
  type: 'string',
  value: 'M',
  required: options.required,
  description,
});

/** @throws CliError not_found when there is no such workspace. */
export async function requireWorkspace(pool: DatabasePool, workspaceId: string): Promise<void> {
  if (!(await workspaceExists(pool, workspaceId))) {
    throw new CliError('not_found', `no workspace ${workspaceId}`);
  }
}

/** @throws CliError not_found when there is no such member. */
export async function requireMember(pool: DatabasePool, memberId: string) {
  const member = await findMember(pool, memberId);
  if (!member) throw new CliError('not_found', `no member ${memberId}`);
  return member;
}

/** @throws CliError not_found when the workspace has no such member. */
export async function requireWorkspaceMember(pool: DatabasePool, workspaceId: string, memberId: string) {
  const member = await findMember(pool, memberId);
  if (!member || member.workspace_id !== workspaceId) {
    throw new CliError('not_found', `no member ${memberId} in workspace ${workspaceId}`);
  }
  return member;
}

/**
 * The `--workspace` flag's id, once the workspace is known to exist.
 * @throws CliError not_found when there is no such workspace.
 */
export async function existingWorkspace(
  pool: DatabasePool,
  values: Record<string, unknown>,
): Promise<string> {
  const workspaceId = requireFlag(values, 'workspace');
  await requireWorkspace(pool, workspaceId);
  return workspaceId;
}
