import type { DatabasePool } from 'slonik';

import { upsertMetadataApp } from '../db/queries/oauthApps.ts';
import { expireUnusedCodes, insertCode } from '../db/queries/oauthCodes.ts';
import { lockLiveGrant, upsertGrant } from '../db/queries/oauthGrants.ts';
import { revokeGrantTokens } from '../db/queries/oauthTokens.ts';
import { type Clock, isoAt } from '../primitives/clock.ts';
import { newId } from '../primitives/ids.ts';
import type { DynamicClient } from './dynamicRegistration.ts';
import { hashToken, lifetimeMs, newOpaqueToken } from './tokens.ts';

/**
 * The app a consent is for: a stored row, or a Client ID Metadata Document (as fetched and checked
 * for this request) whose row the consent creates, or refreshes with the document's current content.
 */
export type ConsentedApp =
  { kind: 'row'; id: string } | { kind: 'document'; clientId: string; client: DynamicClient };

export type CodeRequest = {
  app: ConsentedApp;
  workspaceId: string;
  memberId: string;
  scopes: string[];
  redirectUri: string;
  codeChallenge: string;
  resource: string | null;
  /**
   * No one was asked: a live consent already covers the scopes. It keeps its scopes (an app asking
   * for less narrows nothing), and if it was withdrawn meanwhile no code is issued.
   */
  remembered: boolean;
};

/**
 * Records the person's consent (app, member, scopes) and mints a single-use code bound to the
 * redirect_uri and PKCE challenge, in one transaction. A decision that leaves out a scope the live
 * consent held ends every token and unexchanged code of that consent: the app gets the code issued
 * here, with the narrower scopes, and nothing wider stays alive (rewriting the tokens' scopes instead
 * could not reach the pairs sealed for the refresh grace window, which only the old token opens).
 * @returns the code (svc_ac_…, shown once in the redirect) and whether tokens were ended; null when a
 *   remembered consent no longer covers the request.
 */
export async function issueCode(
  pool: DatabasePool,
  input: CodeRequest,
  clock: Clock,
): Promise<{ code: string; endedTokens: boolean } | null> {
  const code = newOpaqueToken('code');
  return pool.transaction(async (tx) => {
    const { app } = input;
    const appId =
      app.kind === 'row'
        ? app.id
        : (await upsertMetadataApp(tx, { id: newId('app'), clientId: app.clientId, ...app.client })).id;
    const previous = await lockLiveGrant(tx, appId, input.memberId);
    let grantScopes = input.scopes;
    let endedTokens = false;
    if (input.remembered) {
      if (!previous || !input.scopes.every((s) => previous.scopes.includes(s))) return null;
      grantScopes = previous.scopes;
    } else if (previous && previous.scopes.some((s) => !input.scopes.includes(s))) {
      await revokeGrantTokens(tx, previous.id);
      await expireUnusedCodes(tx, previous.id, isoAt(clock));
      endedTokens = true;
    }
    const grant = await upsertGrant(tx, {
      id: newId('grt'),
      appId,
      workspaceId: input.workspaceId,
      memberId: input.memberId,
      scopes: grantScopes,
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
    return { code, endedTokens };
  });
}
