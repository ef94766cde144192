import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { revokeGrantTokens } from './oauthTokens.ts';

const grantRow = z.object({
  id: z.string(),
  app_id: z.string(),
  workspace_id: z.string(),
  member_id: z.string(),
  scopes: z.array(z.string()),
  revoked_at: isoTimestamp.nullable(),
});
export type GrantRow = z.infer<typeof grantRow>;

/** The live consent of this member for this app, if any. */
export function findLiveGrant(db: Db, appId: string, memberId: string) {
  return db.maybeOne(sql.type(grantRow)`
    select id, app_id, workspace_id, member_id, scopes, revoked_at from oauth_grants
    where app_id = ${appId} and member_id = ${memberId} and revoked_at is null
  `);
}

/** The live consent of this member for this app, locked: a consent being recorded decides against it. */
export function lockLiveGrant(db: Db, appId: string, memberId: string) {
  return db.maybeOne(sql.type(grantRow)`
    select id, app_id, workspace_id, member_id, scopes, revoked_at from oauth_grants
    where app_id = ${appId} and member_id = ${memberId} and revoked_at is null
    for update
  `);
}

/**
 * Records consent: the live grant of this app and member takes the approved scopes, or a new one is
 * made. Run in a transaction with the code it is issued for.
 */
export function upsertGrant(
  db: Db,
  g: { id: string; appId: string; workspaceId: string; memberId: string; scopes: string[] },
) {
  return db.one(sql.type(grantRow)`
    insert into oauth_grants (id, app_id, workspace_id, member_id, scopes)
    values (${g.id}, ${g.appId}, ${g.workspaceId}, ${g.memberId}, ${sql.array(g.scopes, 'text')})
    on conflict (app_id, member_id) where revoked_at is null
    do update set scopes = excluded.scopes, updated_at = now()
    returning id, app_id, workspace_id, member_id, scopes, revoked_at
  `);
}

/** Revokes the consent and every token under it; true when it was live. Run in a transaction. */
export async function revokeGrant(db: Db, grantId: string): Promise<boolean> {
  await revokeGrantTokens(db, grantId);
  const revoked = await db.maybeOne(sql.typeAlias('id')`
    update oauth_grants set revoked_at = now() where id = ${grantId} and revoked_at is null returning id
  `);
  return revoked !== null;
}

const connectedAppRow = z.object({
  grant_id: z.string(),
  workspace_id: z.string(),
  workspace_name: z.string(),
  app_name: z.string(),
  verified: z.boolean(),
  scopes: z.array(z.string()),
  created_at: isoTimestamp,
  last_used_at: isoTimestamp.nullable(),
});
export type ConnectedApp = z.infer<typeof connectedAppRow>;

/** The apps these members (one person's rows) have connected, with the last use of any of their tokens. */
export function listConnectedApps(db: Db, memberIds: string[]) {
  return db.any(sql.type(connectedAppRow)`
    select g.id as grant_id, g.workspace_id, w.name as workspace_name, a.name as app_name, a.verified,
           g.scopes, g.created_at, g.last_used_at
    from oauth_grants g
    join oauth_apps a on a.id = g.app_id
    join workspaces w on w.id = g.workspace_id
    where g.member_id = any(${sql.array(memberIds, 'text')}) and g.revoked_at is null
    order by w.name, w.id, a.name, g.id
  `);
}

/** A live grant, only when it belongs to one of these members (a person cuts off only their own apps). */
export function findGrantOfMembers(db: Db, grantId: string, memberIds: string[]) {
  return db.maybeOne(sql.type(grantRow)`
    select id, app_id, workspace_id, member_id, scopes, revoked_at from oauth_grants
    where id = ${grantId} and member_id = any(${sql.array(memberIds, 'text')}) and revoked_at is null
    for update
  `);
}
