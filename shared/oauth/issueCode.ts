import type { DatabasePool } from 'slonik';

import { type Clock, isoAt } from '../clock.ts';
import { upsertMetadataApp } from '../db/queries/oauthApps.ts';
import { insertCode } from '../db/queries/oauthCodes.ts';
import { upsertGrant } from '../db/queries/oauthGrants.ts';
import { newId } from '../ids.ts';
import type { DynamicClient } from './dynamicRegistration.ts';
import { hashToken, lifetimeMs, newOpaqueToken } from './tokens.ts';

/**
 * The app a consent is for: a stored row, or a Client ID Metadata Document (as fetched and checked
 * for this request) whose row the consent creates, or refreshes with the document's current content.
 */
export type ConsentedApp =
  | { kind: 'row'; id: string }
  | { kind: 'document'; clientId: string; client: DynamicClient };

/**
 * Records the person's consent (app, member, scopes) and mints a single-use code bound to the
 * redirect_uri and PKCE challenge, in one transaction.
 * @returns the code (svc_ac_…), shown once in the redirect.
 */
export async function issueCode(
  pool: DatabasePool,
  input: {
    app: ConsentedApp;
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
    const { app } = input;
    const appId =
      app.kind === 'row'
        ? app.id
        : (await upsertMetadataApp(tx, { id: newId('app'), clientId: app.clientId, ...app.client })).id;
    const grant = await upsertGrant(tx, {
      id: newId('grt'),
      appId,
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
