import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

const memberRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  email: z.string(),
  has_developer_access: z.boolean(),
  created_at: isoTimestamp,
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

const credentialRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  workspace_name: z.string(),
  email: z.string(),
  password_hash: z.string(),
});

/** Every member row of one person (one per workspace), matched case-insensitively on the email. */
export function findMembersByEmail(db: Db, email: string) {
  return db.any(sql.type(credentialRow)`
    select m.id, m.workspace_id, w.name as workspace_name, m.email, m.password_hash
    from members m join workspaces w on w.id = m.workspace_id
    where lower(m.email) = lower(${email})
    order by m.created_at, m.id
  `);
}

export async function updateMemberPasswordHash(
  db: Db,
  memberId: string,
  passwordHash: string,
): Promise<void> {
  await db.query(
    sql.typeAlias('void')`update members set password_hash = ${passwordHash} where id = ${memberId}`,
  );
}

const memberWorkspaceRow = z.object({
  member_id: z.string(),
  workspace_id: z.string(),
  workspace_name: z.string(),
});

/** The workspaces these member rows belong to: what a signed-in person may pick at consent. */
export function listMemberWorkspaces(db: Db, memberIds: string[]) {
  return db.any(sql.type(memberWorkspaceRow)`
    select m.id as member_id, w.id as workspace_id, w.name as workspace_name
    from members m join workspaces w on w.id = m.workspace_id
    where m.id = any(${sql.array(memberIds, 'text')})
    order by w.name, w.id
  `);
}

const consoleMemberRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
  workspace_name: z.string(),
  email: z.string(),
  has_developer_access: z.boolean(),
  balance_minor: z.number(),
  currency: z.string(),
  projects: z.array(z.object({ id: z.string(), name: z.string() })),
});
export type ConsoleMember = z.infer<typeof consoleMemberRow>;

/** The signed-in person's member rows with their workspace and its live projects, for the console. */
export function findConsoleMembers(db: Db, memberIds: readonly string[]) {
  return db.any(sql.type(consoleMemberRow)`
    select m.id, m.workspace_id, w.name as workspace_name, m.email, m.has_developer_access, w.balance_minor,
           w.currency,
           coalesce((
             select json_agg(json_build_object('id', p.id, 'name', p.name) order by p.created_at, p.id)
             from projects p where p.workspace_id = w.id and p.archived_at is null
           ), '[]') as projects
    from members m join workspaces w on w.id = m.workspace_id
    where m.id = any(${sql.array([...memberIds], 'text')})
    order by m.created_at, m.id
  `);
}
