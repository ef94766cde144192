import type { DatabasePool } from 'slonik';

import { workspaceExists } from '../shared/db/queries/workspaces.ts';
import { CliError } from './cliError.ts';
import type { Flag } from './commandTable.ts';

/** `--workspace`, as every command that acts within one workspace takes it. */
export const workspaceFlag: Flag = {
  type: 'string',
  value: 'W',
  required: true,
  description: 'Workspace id (ws_…).',
};

/** `--project`, as every command that acts within one project takes it. */
export const projectFlag: Flag = {
  type: 'string',
  value: 'P',
  required: true,
  description: 'Project id (prj_…).',
};

/** @throws CliError not_found when there is no such workspace. */
export async function requireWorkspace(pool: DatabasePool, workspaceId: string): Promise<void> {
  if (!(await workspaceExists(pool, workspaceId))) {
    throw new CliError('not_found', `no workspace ${workspaceId}`);
  }
}
