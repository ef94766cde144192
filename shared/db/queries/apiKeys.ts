import { z } from 'zod';

import type { Principal, ScopeLevel } from '../../principal.ts';
import { type Db, sql } from '../sql.ts';

const authRow = z.object({
  id: z.string(),
  name: z.string(),
  secret_hint: z.string(),
  workspace_id: z.string(),
  member_id: z.string(),
  livemode: z.boolean(),
  scope_level: z.enum(['app', 'package', 'operation']),
  scope_packages: z.array(z.string()),
  scope_operations: z.array(z.string()),
  expires_at: z.string().nullable(),
  ip_allowlist: z.array(z.string()),
  monthly_spend_cap_minor: z.number().nullable(),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
  has_developer_access: z.boolean(),
  currency: z.string(),
  rate_limit_per_minute: z.number().nullable(),
  projects: z.array(z.object({ id: z.string(), name: z.string() })),
});
export type KeyAuthRow = z.infer<typeof authRow>;

/** Everything the auth middleware checks, in one round trip. */
export function findKeyForAuth(db: Db, secretHash: Buffer) {
  return db.maybeOne(sql.type(authRow)`
    select k.id, k.name, k.secret_hint, k.workspace_id, k.member_id, k.livemode, k.scope_level,
           k.scope_packages, k.scope_operations, k.expires_at, k.ip_allowlist, k.monthly_spend_cap_minor,
           k.revoked_at, k.created_at, m.has_developer_access, w.currency, w.rate_limit_per_minute,
           coalesce((
             select json_agg(json_build_object('id', p.id, 'name', p.name) order by p.created_at, p.id)
             from api_key_projects kp join projects p on p.id = kp.project_id
             where kp.key_id = k.id and p.archived_at is null
           ), '[]') as projects
    from api_keys k
    join members m on m.id = k.member_id
    join workspaces w on w.id = k.workspace_id
    where k.secret_hash = ${sql.binary(secretHash)}
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

const revokedKeyRow = z.object({ id: z.string(), revoked_at: z.string() });

export function revokeApiKey(db: Db, keyId: string) {
  return db.maybeOne(sql.type(revokedKeyRow)`
    update api_keys set revoked_at = coalesce(revoked_at, now()) where id = ${keyId}
    returning id, revoked_at
  `);
}
