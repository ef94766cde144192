import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const projectRow = z.object({ id: z.string(), workspace_id: z.string(), name: z.string() });

export function insertProject(db: Db, p: { id: string; workspaceId: string; name: string }) {
  return db.one(sql.type(projectRow)`
    insert into projects (id, workspace_id, name) values (${p.id}, ${p.workspaceId}, ${p.name})
    returning id, workspace_id, name
  `);
}

export function findProjects(db: Db, projectIds: string[]) {
  return db.any(sql.type(projectRow)`
    select id, workspace_id, name from projects where id = any(${sql.array(projectIds, 'text')})
  `);
}

export function findProject(db: Db, projectId: string) {
  return db.maybeOne(
    sql.type(projectRow)`select id, workspace_id, name from projects where id = ${projectId}`,
  );
}
