import type { FragmentSqlToken } from 'slonik';
import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

/** The columns every row a workspace owns begins with: its id and its workspace. */
export const workspaceRecord = z.object({ id: z.string(), workspace_id: z.string() });

/** What inserting such a row is given first: its new id and its workspace. */
export type NewWorkspaceRecord = { id: string; workspaceId: string };

/** A table of rows a workspace owns, and what one of its rows is read as. */
export type WorkspaceTable<Row extends z.ZodType> = { name: string; row: Row; columns: FragmentSqlToken };

/**
 * A row by its id when it belongs to the workspace: a row of another workspace reads as absent, so
 * the caller answers not_found for it as for a row that never was.
 */
export function findInWorkspace<Row extends z.ZodType>(
  db: Db,
  table: WorkspaceTable<Row>,
  workspaceId: string,
  id: string,
) {
  return db.maybeOne(sql.type(table.row)`
    select ${table.columns} from ${sql.identifier([table.name])} where id = ${id} and workspace_id = ${workspaceId}
  `);
}
