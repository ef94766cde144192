import { insertToken } from '../db/queries/oauthTokens.ts';
import type { Db } from '../db/sql.ts';
import { type Clock, isoAt } from '../primitives/clock.ts';
import { newId } from '../primitives/ids.ts';
import { hashToken, lifetimeMs, newOpaqueToken, type SealedPair, tokenHint } from './tokens.ts';

/** The token response body (RFC 6749 §5.1). */
export type TokenResponse = {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  scope: string;
  refresh_token?: string;
};

/** Only offline_access earns a refresh token (spec "OAuth 2.1 apps" step 4). */
export const wantsRefresh = (scopes: string[]) => scopes.includes('offline_access');

/**
 * Mints an access token, and a refresh token when the scopes include offline_access, in the caller's
 * transaction. Both join the family of the code they descend from.
 */
export async function issueTokens(
  tx: Db,
  input: { grantId: string; familyId: string; scopes: string[]; resource: string | null; clock: Clock },
): Promise<{ response: TokenResponse; pair: SealedPair }> {
  const { clock } = input;
  const createdAt = isoAt(clock);
  let refreshToken: string | undefined;
  let refreshTokenId: string | null = null;
  if (wantsRefresh(input.scopes)) {
    refreshToken = newOpaqueToken('refresh');
    refreshTokenId = newId('ort');
    await insertToken(tx, {
      id: refreshTokenId,
      kind: 'refresh',
      tokenHash: hashToken(refreshToken),
      hint: tokenHint(refreshToken),
      grantId: input.grantId,
      familyId: input.familyId,
      refreshTokenId: null,
      scopes: input.scopes,
      expiresAt: isoAt(clock, lifetimeMs.refresh),
      createdAt,
      resource: input.resource,
    });
  }
  const accessToken = newOpaqueToken('access');
  const accessExpiresAt = isoAt(clock, lifetimeMs.access);
  await insertToken(tx, {
    id: newId('oat'),
    kind: 'access',
    tokenHash: hashToken(accessToken),
    hint: tokenHint(accessToken),
    grantId: input.grantId,
    familyId: input.familyId,
    refreshTokenId,
    scopes: input.scopes,
    expiresAt: accessExpiresAt,
    createdAt,
    resource: input.resource,
  });
  const scope = input.scopes.join(' ');
  return {
    response: tokenResponse({ accessToken, refreshToken, accessExpiresAt, scope }, clock),
    pair: { accessToken, refreshToken: refreshToken ?? '', accessExpiresAt, scope },
  };
}

/** The response for a pair, with expires_in counted from now (a grace-window repeat has less left). */
export function tokenResponse(
  p: { accessToken: string; refreshToken?: string; accessExpiresAt: string; scope: string },
  clock: Clock,
): TokenResponse {
  return {
    access_token: p.accessToken,
    token_type: 'Bearer',
    expires_in: Math.max(0, Math.floor((Date.parse(p.accessExpiresAt) - clock()) / 1000)),
    scope: p.scope,
    ...(p.refreshToken ? { refresh_token: p.refreshToken } : {}),
  };
}
