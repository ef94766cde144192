import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

export type NewToken = {
  id: string;
  kind: 'access' | 'refresh';
  tokenHash: Buffer;
  hint: string;
  grantId: string;
  familyId: string;
  refreshTokenId: string | null;
  scopes: string[];
  expiresAt: string;
  createdAt: string;
  resource: string | null;
};

export async function insertToken(db: Db, t: NewToken): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into oauth_tokens (id, kind, token_hash, hint, grant_id, family_id, refresh_token_id, scopes, expires_at,
                              created_at, resource)
    values (${t.id}, ${t.kind}, ${sql.binary(t.tokenHash)}, ${t.hint}, ${t.grantId}, ${t.familyId},
            ${t.refreshTokenId}, ${sql.array(t.scopes, 'text')}, ${t.expiresAt}, ${t.createdAt}, ${t.resource})
  `);
}

const lockedTokenRow = z.object({
  id: z.string(),
  kind: z.enum(['access', 'refresh']),
  grant_id: z.string(),
  family_id: z.string(),
  app_id: z.string(),
  grant_revoked_at: isoTimestamp.nullable(),
  scopes: z.array(z.string()),
  expires_at: isoTimestamp,
  revoked_at: isoTimestamp.nullable(),
  rotated_at: isoTimestamp.nullable(),
  successor_sealed: z.instanceof(Buffer).nullable(),
  resource: z.string().nullable(),
});
export type LockedToken = z.infer<typeof lockedTokenRow>;

/**
 * A token with its grant's app, locked: concurrent refreshes with one refresh token queue here, and
 * each one after the first finds it rotated.
 */
export function lockToken(db: Db, tokenHash: Buffer) {
  return db.maybeOne(sql.type(lockedTokenRow)`
    select t.id, t.kind, t.grant_id, t.family_id, g.app_id, g.revoked_at as grant_revoked_at, t.scopes,
           t.expires_at, t.revoked_at, t.rotated_at, t.successor_sealed, t.resource
    from oauth_tokens t join oauth_grants g on g.id = t.grant_id
    where t.token_hash = ${sql.binary(tokenHash)}
    for update of t
  `);
}

/** Ends a refresh token by rotation, keeping its sealed successor for the grace window; its access tokens end too. */
export async function markRotated(db: Db, tokenId: string, at: string, sealed: Buffer): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update oauth_tokens set rotated_at = ${at}, revoked_at = ${at}, successor_sealed = ${sql.binary(sealed)}
    where id = ${tokenId}
  `);
  await db.query(sql.typeAlias('void')`
    update oauth_tokens set revoked_at = ${at} where refresh_token_id = ${tokenId} and revoked_at is null
  `);
}

/** Revokes every token descended from one code (a replayed code, RFC 9700 §4.5). */
export async function revokeFamily(db: Db, familyId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update oauth_tokens set revoked_at = now() where family_id = ${familyId} and revoked_at is null
  `);
}

/** Revokes every live token of one consent, access and refresh alike. */
export async function revokeGrantTokens(db: Db, grantId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update oauth_tokens set revoked_at = now() where grant_id = ${grantId} and revoked_at is null
  `);
}

/** Revokes one token and, for a refresh token, the access tokens issued with it. */
export async function revokeToken(db: Db, tokenId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update oauth_tokens set revoked_at = now()
    where (id = ${tokenId} or refresh_token_id = ${tokenId}) and revoked_at is null
  `);
}

const accessAuthRow = z.object({
  id: z.string(),
  hint: z.string(),
  grant_id: z.string(),
  scopes: z.array(z.string()),
  expires_at: isoTimestamp.nullable(),
  /** The token's or its consent's revocation, whichever is set. */
  revoked_at: isoTimestamp.nullable(),
  created_at: isoTimestamp,
  workspace_id: z.string(),
  member_id: z.string(),
  app_id: z.string(),
  app_name: z.string(),
  currency: z.string(),
  rate_limit_per_minute: z.number().nullable(),
  tokens_per_minute: z.number().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string() })),
  resource: z.string().nullable(),
});
export type AccessTokenAuthRow = z.infer<typeof accessAuthRow>;

/**
 * Everything the auth middleware checks for an access token, in one round trip. The member must
 * still exist: removing a person from the workspace deletes the member row and the grant with it.
 */
export function findAccessTokenForAuth(db: Db, tokenHash: Buffer) {
  return db.maybeOne(sql.type(accessAuthRow)`
    select t.id, t.hint, t.grant_id, t.scopes, t.expires_at, coalesce(t.revoked_at, g.revoked_at) as revoked_at,
           t.created_at, g.workspace_id, g.member_id, a.id as app_id, a.name as app_name, w.currency,
           w.rate_limit_per_minute, w.tokens_per_minute::float8 as tokens_per_minute,
           case when a.project_id is null then
                  -- A self-registered app acts in every active project of the consenting workspace.
                  (select coalesce(json_agg(json_build_object('id', wp.id, 'name', wp.name) order by wp.created_at, wp.id),
                                   '[]'::json)
                   from projects wp where wp.workspace_id = g.workspace_id and wp.archived_at is null)
                when p.archived_at is null then json_build_array(json_build_object('id', p.id, 'name', p.name))
                else '[]'::json end as projects,
           t.resource
    from oauth_tokens t
    join oauth_grants g on g.id = t.grant_id
    join oauth_apps a on a.id = g.app_id
    left join projects p on p.id = a.project_id
    join members m on m.id = g.member_id
    join workspaces w on w.id = g.workspace_id
    where t.token_hash = ${sql.binary(tokenHash)} and t.kind = 'access'
  `);
}

/**
 * Records use at most once a minute per token, on the token and its consent: the account page shows
 * it, nothing depends on precision. Neither column fires `auth:changed`.
 */
export async function touchToken(db: Db, tokenId: string, grantId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    with token as (
      update oauth_tokens set last_used_at = now()
      where id = ${tokenId} and (last_used_at is null or last_used_at < now() - interval '1 minute')
      returning id
    )
    update oauth_grants set last_used_at = now()
    where id = ${grantId} and exists (select 1 from token)
  `);
}

/**
 * Hourly retention: codes and tokens a day past expiry (nothing can use them, and replay checks
 * need them only while they live), consents withdrawn 30 days ago, and expired browser sessions and
 * sign-in failure windows.
 */
export async function deleteExpiredOauthRows(db: Db): Promise<void> {
  await db.query(sql.typeAlias('void')`delete from oauth_codes where expires_at < now() - interval '1 day'`);
  await db.query(sql.typeAlias('void')`delete from oauth_tokens where expires_at < now() - interval '1 day'`);
  await db.query(sql.typeAlias('void')`
    delete from oauth_grants where revoked_at < now() - interval '30 days'
  `);
  await db.query(sql.typeAlias('void')`delete from browser_sessions where expires_at < now()`);
  await db.query(sql.typeAlias('void')`
    delete from sign_in_failures where window_started_at < now() - interval '1 day'
  `);
}
