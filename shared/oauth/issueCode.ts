import type { DatabasePool } from 'slonik';

import { type Clock, isoAt } from '../clock.ts';
import { insertCode } from '../db/queries/oauthCodes.ts';
import { upsertGrant } from '../db/queries/oauthGrants.ts';
import { newId } from '../ids.ts';
import { hashToken, lifetimeMs, newOpaqueToken } from './tokens.ts';

/**
 * Records the person's consent (app, member, scopes) and mints a single-use code bound to the
 * redirect_uri and PKCE challenge, in one transaction.
 * @returns the code (svc_ac_…), shown once in the redirect.
 */
export async function issueCode(
  pool: DatabasePool,
  input: {
    appId: string;
    workspaceId: string;
    memberId: string;
    scopes: string[];
    redirectUri: string;
    codeChallenge: string;
    resource: string | null;
  },
  clock: Clock,
): Promise<string> {
  const code = newOpaqueToken('code');
  await pool.transaction(async (tx) => {
    const grant = await upsertGrant(tx, {
      id: newId('grt'),
      appId: input.appId,
      workspaceId: input.workspaceId,
      memberId: input.memberId,
      scopes: input.scopes,
    });
    await insertCode(tx, {
      id: newId('oac'),
      codeHash: hashToken(code),
      grantId: grant.id,
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      scopes: input.scopes,
      expiresAt: isoAt(clock, lifetimeMs.code),
      resource: input.resource,
    });
  });
  return code;
}
