import { z } from 'zod';

import type { Principal, ScopeLevel } from '../../auth/principal.ts';
import { type Db, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';

/** A key's own columns, as both the auth lookup and the key listings read them. */
const keyColumns = z.object({
  id: z.string(),
  name: z.string(),
  secret_hint: z.string(),
  workspace_id: z.string(),
  member_id: z.string(),
  livemode: z.boolean(),
  scope_level: z.enum(['app', 'package', 'operation']),
  scope_packages: z.array(z.string()),
  scope_operations: z.array(z.string()),
  expires_at: isoTimestamp.nullable(),
  ip_allowlist: z.array(z.string()),
  monthly_spend_cap_minor: z.number().nullable(),
  revoked_at: isoTimestamp.nullable(),
  created_at: isoTimestamp,
});

const authRow = keyColumns.extend({
  has_developer_access: z.boolean(),
  currency: z.string(),
  rate_limit_per_minute: z.number().nullable(),
  workspace_tokens_per_minute: z.number().nullable(),
  key_tokens_per_minute: z.number().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string() })),
});

export type KeyAuthRow = z.infer<typeof authRow>;

/**
 * Everything the auth middleware checks, in one round trip. A rolled key's previous secret finds the
 * same key with its expiry brought forward to the overlap's end, so the per-request expiry check (and
 * the cache, which keeps expiry) stops it on time without a second rule.
 */
export function findKeyForAuth(db: Db, secretHash: Buffer) {
  return db.maybeOne(sql.type(authRow)`
    select k.id, k.name, k.secret_hint, k.workspace_id, k.member_id, k.livemode, k.scope_level,
           k.scope_packages, k.scope_operations,
           case when k.secret_hash = ${sql.binary(secretHash)} then k.expires_at
                else least(k.expires_at, k.previous_secret_expires_at) end as expires_at,
           k.ip_allowlist, k.monthly_spend_cap_minor,
           k.revoked_at, k.created_at, m.has_developer_access, w.currency, w.rate_limit_per_minute,
           w.tokens_per_minute::float8 as workspace_tokens_per_minute,
           k.tokens_per_minute::float8 as key_tokens_per_minute,
           coalesce((
             select json_agg(json_build_object('id', p.id, 'name', p.name) order by p.created_at, p.id)
             from api_key_projects kp join projects p on p.id = kp.project_id
             where kp.key_id = k.id and p.archived_at is null
           ), '[]') as projects
    from api_keys k
    join members m on m.id = k.member_id
    join workspaces w on w.id = k.workspace_id
    where k.secret_hash = ${sql.binary(secretHash)} or k.previous_secret_hash = ${sql.binary(secretHash)}
  `);
}

export function toPrincipal(row: KeyAuthRow): Principal {
  return {
    credentialType: 'api_key',
    credentialId: row.id,
    keyId: row.id,
    oauthAppId: null,
    name: row.name,
    hint: row.secret_hint,
    workspaceId: row.workspace_id,
    currency: row.currency,
    memberId: row.member_id,
    livemode: row.livemode,
    scope: { level: row.scope_level, packages: row.scope_packages, operations: row.scope_operations },
    projects: row.projects,
    monthlySpendCapMinor: row.monthly_spend_cap_minor,
    rateLimitPerMinute: row.rate_limit_per_minute,
    tokensPerMinute: row.workspace_tokens_per_minute,
    keyTokensPerMinute: row.key_tokens_per_minute,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
  };
}

export type NewApiKey = {
  id: string;
  workspaceId: string;
  memberId: string;
  name: string;
  secretHash: Buffer;
  hint: string;
  livemode: boolean;
  scopeLevel: ScopeLevel;
  packages: string[];
  operations: string[];
  expiresAt: string | null;
  ipAllowlist: string[];
  monthlySpendCapMinor: number | null;
  projectIds: string[];
};

/** Inserts the key and its project links; run inside a transaction. */
export async function insertApiKey(db: Db, key: NewApiKey): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into api_keys (id, workspace_id, member_id, name, secret_hash, secret_hint, livemode, scope_level,
                          scope_packages, scope_operations, expires_at, ip_allowlist, monthly_spend_cap_minor)
    values (${key.id}, ${key.workspaceId}, ${key.memberId}, ${key.name}, ${sql.binary(key.secretHash)}, ${key.hint},
            ${key.livemode}, ${key.scopeLevel}, ${sql.array(key.packages, 'text')}, ${sql.array(key.operations, 'text')},
            ${key.expiresAt}, ${sql.array(key.ipAllowlist, 'text')}, ${key.monthlySpendCapMinor})
  `);
  await db.query(sql.typeAlias('void')`
    insert into api_key_projects (key_id, project_id)
    select ${key.id}, unnest(${sql.array(key.projectIds, 'text')}::text[])
  `);
}

/** A key's own tokens per minute (`key create --tokens-per-minute`), in the transaction creating it. */
export async function setKeyTokensPerMinute(db: Db, keyId: string, tokensPerMinute: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update api_keys set tokens_per_minute = ${tokensPerMinute} where id = ${keyId}
  `);
}

const revokedKeyRow = z.object({
  id: z.string(),
  revoked_at: isoTimestamp,
  revoked_by: z.string().nullable(),
});

/**
 * Revokes the key, recording who did it: a member's id (the console) or 'operator' (the CLI).
 * Revoking a revoked key changes nothing (the first revocation's time and revoker stay). Null when
 * there is no such key.
 */
export function revokeApiKey(db: Db, keyId: string, revokedBy: string) {
  return db.maybeOne(sql.type(revokedKeyRow)`
    update api_keys
    set revoked_at = coalesce(revoked_at, now()),
        revoked_by = case when revoked_at is null then ${revokedBy} else revoked_by end
    where id = ${keyId}
    returning id, revoked_at, revoked_by
  `);
}

/**
 * Gives a key a new secret; the current one becomes the previous secret until `previousUntil`
 * (replacing any earlier previous secret). Null when the key is not in the workspace or is revoked.
 */
export function rollApiKeySecret(
  db: Db,
  input: { keyId: string; workspaceId: string; secretHash: Buffer; hint: string; previousUntil: string },
) {
  return db.maybeOne(sql.type(z.object({ id: z.string() }))`
    update api_keys
    set previous_secret_hash = secret_hash, previous_secret_expires_at = ${input.previousUntil},
        secret_hash = ${sql.binary(input.secretHash)}, secret_hint = ${input.hint}
    where id = ${input.keyId} and workspace_id = ${input.workspaceId} and revoked_at is null
    returning id
  `);
}

const keyRow = keyColumns.extend({
  previous_secret_expires_at: isoTimestamp.nullable(),
  revoked_by: z.string().nullable(),
});
export type ApiKeyRow = z.infer<typeof keyRow>;

export function findApiKey(db: Db, keyId: string) {
  return db.maybeOne(sql.type(keyRow)`
    select id, workspace_id, member_id, name, secret_hint, livemode, scope_level, scope_packages, scope_operations,
           expires_at, ip_allowlist, monthly_spend_cap_minor, revoked_at, revoked_by, previous_secret_expires_at,
           created_at
    from api_keys where id = ${keyId}
  `);
}

const keyProjects = z.array(z.object({ id: z.string(), name: z.string() }));

/** The key's projects as { id, name } objects, oldest first (archived ones included). */
const projectsOfKey = sql.fragment`coalesce((
  select json_agg(json_build_object('id', p.id, 'name', p.name) order by p.created_at, p.id)
  from api_key_projects kp join projects p on p.id = kp.project_id where kp.key_id = k.id
), '[]')`;

const operatorKeyRow = z.object({
  id: z.string(),
  name: z.string(),
  member_id: z.string(),
  projects: keyProjects,
  livemode: z.boolean(),
  created_at: isoTimestamp,
  expires_at: isoTimestamp.nullable(),
  revoked_at: isoTimestamp.nullable(),
  revoked_by: z.string().nullable(),
});

/**
 * Every key of a workspace (or of one of its members), newest first, as `key list` shows them:
 * never a secret, hash or hint. Served by api_keys_member_idx with a member; without one it reads
 * api_keys as the console's list does (an operator command, not a hot path).
 */
export function listKeysForOperator(db: Db, filter: { workspaceId: string; memberId?: string }) {
  const member = filter.memberId ? sql.fragment`and k.member_id = ${filter.memberId}` : sql.fragment``;
  return db.any(sql.type(operatorKeyRow)`
    select k.id, k.name, k.member_id, ${projectsOfKey} as projects, k.livemode, k.created_at, k.expires_at,
           k.revoked_at, k.revoked_by
    from api_keys k
    where k.workspace_id = ${filter.workspaceId} ${member}
    order by k.created_at desc, k.id desc
  `);
}

const listedKeyRow = keyRow.extend({
  // Who created the key (it acts as them) and who revoked it, by email; null for an operator.
  member_email: z.string(),
  revoked_by_email: z.string().nullable(),
  projects: keyProjects,
  spent_this_month_minor: z.number(),
  last_used_at: isoTimestamp.nullable(),
  cursor_at: cursorAtText,
});
export type ListedKey = z.infer<typeof listedKeyRow>;

/**
 * A workspace's revoked keys, or the others (`revoked: false`), newest first, a page after
 * (created_at, id): with their projects, this UTC month's spend (the row the spend cap is enforced
 * on) and the last logged call (request_logs_workspace_key_idx, newest partition first).
 */
export function listWorkspaceKeys(db: Db, workspaceId: string, revoked: boolean, page: ListPage) {
  return db.any(sql.type(listedKeyRow)`
    select k.id, k.workspace_id, k.member_id, k.name, k.secret_hint, k.livemode, k.scope_level, k.scope_packages,
           k.scope_operations, k.expires_at, k.ip_allowlist, k.monthly_spend_cap_minor, k.revoked_at,
           k.revoked_by, k.previous_secret_expires_at, k.created_at,
           ${cursorAt('k')},
           (select m.email from members m where m.id = k.member_id) as member_email,
           (select m.email from members m where m.id = k.revoked_by) as revoked_by_email,
           ${projectsOfKey} as projects,
           coalesce((
             select s.spent_minor from key_monthly_spend s
             where s.key_id = k.id and s.month = (date_trunc('month', now() at time zone 'utc'))::date
           ), 0) as spent_this_month_minor,
           (
             select l.created_at from request_logs l
             where l.workspace_id = k.workspace_id and l.key_id = k.id
             order by l.created_at desc, l.id desc limit 1
           ) as last_used_at
    from api_keys k
    where k.workspace_id = ${workspaceId} and (k.revoked_at is not null) = ${revoked}
      ${afterPosition(page, 'k')}
    ${newestFirst(page, 'k')}
  `);
}

/** Every key of a workspace by name (newest first, at most 500), for the request log's filter. */
export function listWorkspaceKeyNames(db: Db, workspaceId: string) {
  return db.any(sql.type(z.object({ id: z.string(), name: z.string(), revoked: z.boolean() }))`
    select id, name, revoked_at is not null as revoked from api_keys
    where workspace_id = ${workspaceId}
    order by created_at desc, id desc
    limit 500
  `);
}
