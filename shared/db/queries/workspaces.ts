import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

export type NewWorkspace = {
  id: string;
  name: string;
  currency: string;
  balanceMinor: number;
  storageQuotaBytes: number | null;
  rateLimitPerMinute: number | null;
};

const insertedWorkspaceRow = z.object({ id: z.string(), name: z.string() });

export function insertWorkspace(db: Db, w: NewWorkspace) {
  return db.one(sql.type(insertedWorkspaceRow)`
    insert into workspaces (id, name, currency, balance_minor, storage_quota_bytes, rate_limit_per_minute)
    values (${w.id}, ${w.name}, ${w.currency}, ${w.balanceMinor},
            coalesce(${w.storageQuotaBytes}::bigint, 10737418240), ${w.rateLimitPerMinute})
    returning id, name
  `);
}

const limitsRow = z.object({
  id: z.string(),
  rate_limit_per_minute: z.number().nullable(),
  tokens_per_minute: z.number().nullable(),
});

/**
 * Sets a workspace's limits (`workspace set-limits`): a limit left undefined keeps its value, null
 * clears it (requests: back to RATE_LIMIT_PER_MINUTE; tokens: none). Null when there is no such workspace.
 */
export function setWorkspaceLimits(
  db: Db,
  workspaceId: string,
  limits: { rateLimitPerMinute?: number | null; tokensPerMinute?: number | null },
) {
  return db.maybeOne(sql.type(limitsRow)`
    update workspaces set
      rate_limit_per_minute = case when ${limits.rateLimitPerMinute !== undefined}
                                   then ${limits.rateLimitPerMinute ?? null}::int else rate_limit_per_minute end,
      tokens_per_minute = case when ${limits.tokensPerMinute !== undefined}
                               then ${limits.tokensPerMinute ?? null}::bigint else tokens_per_minute end
    where id = ${workspaceId}
    returning id, rate_limit_per_minute, tokens_per_minute::float8 as tokens_per_minute
  `);
}

const currencyRow = z.object({ currency: z.string() });

export function findWorkspaceCurrency(db: Db, workspaceId: string): Promise<string> {
  return db.oneFirst(sql.type(currencyRow)`
    select currency from workspaces where id = ${workspaceId}
  `);
}

export function workspaceExists(db: Db, workspaceId: string): Promise<boolean> {
  return db.exists(sql.typeAlias('void')`select from workspaces where id = ${workspaceId}`);
}

const workspaceBalanceRow = z.object({
  balance_minor: z.number(),
  reserved_minor: z.number(),
  currency: z.string(),
});

export function findWorkspaceBalance(db: Db, workspaceId: string) {
  return db.maybeOne(sql.type(workspaceBalanceRow)`
    select balance_minor, reserved_minor, currency from workspaces where id = ${workspaceId}
  `);
}

/**
 * Counts `bytes` more against the workspace's storage. Stored output the service produced (a
 * rendered video) is added after the fact: the operation that made it has no storage error to answer.
 */
export async function addStorageUsed(db: Db, workspaceId: string, bytes: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update workspaces set storage_used_bytes = storage_used_bytes + ${bytes} where id = ${workspaceId}
  `);
}
