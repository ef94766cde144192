import { insertApiKey, type NewApiKey, rollApiKeySecret } from '../db/queries/apiKeys.ts';
import type { Db } from '../db/sql.ts';
import { newId, newKeySecret, sha256 } from '../primitives/ids.ts';

/** What a caller decides about a new key; its id, secret hash and hint are minted here. */
export type CreateKeyInput = Omit<NewApiKey, 'id' | 'secretHash' | 'hint'>;

/** A key's options when nothing narrows it: whole-app scope, no expiry, any IP, no spend cap. */
export function unrestricted(): Pick<
  CreateKeyInput,
  'scopeLevel' | 'packages' | 'operations' | 'expiresAt' | 'ipAllowlist' | 'monthlySpendCapMinor'
> {
  return {
    scopeLevel: 'app',
    packages: [],
    operations: [],
    expiresAt: null,
    ipAllowlist: [],
    monthlySpendCapMinor: null,
  };
}

const keyHint = (secret: string) => `${secret.slice(0, 12)}…${secret.slice(-4)}`;

/** The longest a rolled key's old secret may keep working: a deployment's switch, not a second key. */
export const maxRollOverlapMs = 24 * 60 * 60_000;

/**
 * Gives a key a new secret (returned once); the old one keeps working for `overlapMs` (0 to 24 h).
 * Null when the workspace has no such unrevoked key.
 * @throws RangeError when the overlap is outside 0 to 24 h.
 */
export async function rollApiKey(
  db: Db,
  input: { keyId: string; workspaceId: string; livemode: boolean; overlapMs: number; now: number },
): Promise<{ id: string; secret: string; previousUntil: string } | null> {
  if (!Number.isInteger(input.overlapMs) || input.overlapMs < 0 || input.overlapMs > maxRollOverlapMs) {
    throw new RangeError('The overlap must be between 0 and 24 hours.');
  }
  const secret = newKeySecret(input.livemode);
  const previousUntil = new Date(input.now + input.overlapMs).toISOString();
  const row = await rollApiKeySecret(db, {
    keyId: input.keyId,
    workspaceId: input.workspaceId,
    secretHash: sha256(secret),
    hint: keyHint(secret),
    previousUntil,
  });
  return row ? { id: row.id, secret, previousUntil } : null;
}

/** Mints a key; the secret is returned here once and only its hash is stored. */
export async function createApiKey(tx: Db, input: CreateKeyInput): Promise<{ id: string; secret: string }> {
  const secret = newKeySecret(input.livemode);
  const id = newId('key');
  await insertApiKey(tx, { ...input, id, secretHash: sha256(secret), hint: keyHint(secret) });
  return { id, secret };
}
