import { insertApiKey } from './db/queries/apiKeys.ts';
import type { Db } from './db/sql.ts';
import { newId, newKeySecret, sha256 } from './ids.ts';
import type { ScopeLevel } from './principal.ts';

export type CreateKeyInput = {
  workspaceId: string;
  memberId: string;
  projectIds: string[];
  livemode: boolean;
  name: string;
  scopeLevel: ScopeLevel;
  packages: string[];
  operations: string[];
  expiresAt: string | null;
  ipAllowlist: string[];
  monthlySpendCapMinor: number | null;
};

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

/** Mints a key; the secret is returned here once and only its hash is stored. */
export async function createApiKey(tx: Db, input: CreateKeyInput): Promise<{ id: string; secret: string }> {
  const secret = newKeySecret(input.livemode);
  const id = newId('key');
  await insertApiKey(tx, {
    id,
    workspaceId: input.workspaceId,
    memberId: input.memberId,
    name: input.name,
    secretHash: sha256(secret),
    hint: `${secret.slice(0, 12)}…${secret.slice(-4)}`,
    livemode: input.livemode,
    scopeLevel: input.scopeLevel,
    packages: input.packages,
    operations: input.operations,
    expiresAt: input.expiresAt,
    ipAllowlist: input.ipAllowlist,
    monthlySpendCapMinor: input.monthlySpendCapMinor,
    projectIds: input.projectIds,
  });
  return { id, secret };
}
