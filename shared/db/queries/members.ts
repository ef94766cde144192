import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const memberRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  email: z.string(),
  has_developer_access: z.boolean(),
  created_at: z.string(),
});

export function insertMember(
  db: Db,
  m: { id: string; workspaceId: string; email: string; passwordHash: string; hasDeveloperAccess: boolean },
) {
  return db.one(sql.type(memberRow)`
    insert into members (id, workspace_id, email, password_hash, has_developer_access)
    values (${m.id}, ${m.workspaceId}, ${m.email}, ${m.passwordHash}, ${m.hasDeveloperAccess})
    returning id, workspace_id, email, has_developer_access, created_at
  `);
}

export function findMember(db: Db, memberId: string) {
  return db.maybeOne(sql.type(memberRow)`
    select id, workspace_id, email, has_developer_access, created_at from members where id = ${memberId}
  `);
}

export function setMemberDeveloperAccess(db: Db, memberId: string, on: boolean) {
  return db.maybeOne(sql.type(memberRow)`
    update members set has_developer_access = ${on} where id = ${memberId}
    returning id, workspace_id, email, has_developer_access, created_at
  `);
}
