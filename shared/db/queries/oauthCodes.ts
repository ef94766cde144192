import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

export type NewCode = {
  id: string;
  codeHash: Buffer;
  grantId: string;
  redirectUri: string;
  codeChallenge: string;
  scopes: string[];
  expiresAt: string;
  resource: string | null;
};

export async function insertCode(db: Db, c: NewCode): Promise<void> {
  await db.query(sql.typeAlias('void')`
    insert into oauth_codes (id, code_hash, grant_id, redirect_uri, code_challenge, scopes, expires_at, resource)
    values (${c.id}, ${sql.binary(c.codeHash)}, ${c.grantId}, ${c.redirectUri}, ${c.codeChallenge},
            ${sql.array(c.scopes, 'text')}, ${c.expiresAt}, ${c.resource})
  `);
}

const lockedCodeRow = z.object({
  id: z.string(),
  grant_id: z.string(),
  app_id: z.string(),
  workspace_id: z.string(),
  grant_revoked_at: isoTimestamp.nullable(),
  redirect_uri: z.string(),
  code_challenge: z.string(),
  scopes: z.array(z.string()),
  expires_at: isoTimestamp,
  used_at: isoTimestamp.nullable(),
  resource: z.string().nullable(),
});
export type LockedCode = z.infer<typeof lockedCodeRow>;

/** The code with its grant, locked: of two concurrent exchanges, the second sees `used_at` set. */
export function lockCode(db: Db, codeHash: Buffer) {
  return db.maybeOne(sql.type(lockedCodeRow)`
    select c.id, c.grant_id, g.app_id, g.workspace_id, g.revoked_at as grant_revoked_at, c.redirect_uri,
           c.code_challenge, c.scopes, c.expires_at, c.used_at, c.resource
    from oauth_codes c join oauth_grants g on g.id = c.grant_id
    where c.code_hash = ${sql.binary(codeHash)}
    for update of c
  `);
}

export async function markCodeUsed(db: Db, codeId: string, at: string): Promise<void> {
  await db.query(sql.typeAlias('void')`update oauth_codes set used_at = ${at} where id = ${codeId}`);
}

/** Ends the consent's codes not yet exchanged: they carry the scopes of a consent since replaced. */
export async function expireUnusedCodes(db: Db, grantId: string, at: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update oauth_codes set expires_at = least(expires_at, ${at}::timestamptz)
    where grant_id = ${grantId} and used_at is null
  `);
}
