import type { DatabasePool } from 'slonik';

import { lockCode, markCodeUsed } from '../db/queries/oauthCodes.ts';
import { revokeGrant } from '../db/queries/oauthGrants.ts';
import { lockToken, markRotated, revokeFamily, revokeToken } from '../db/queries/oauthTokens.ts';
import { type Clock, isoAt } from '../primitives/clock.ts';
import { issueTokens, type TokenResponse, tokenResponse } from './issueTokens.ts';
import { OauthError } from './oauthError.ts';
import { verifierMatches } from './pkce.ts';
import { hashToken, isTokenOf, openSuccessor, sealSuccessor } from './tokens.ts';

/** The authenticated client of a token request. */
export type Client = { appId: string; clientId: string };

export type GrantOptions = {
  clock: Clock;
  /**
   * How long a rotated refresh token still answers with the pair that replaced it: a client whose
   * concurrent refreshes raced (two tabs, a retried request) keeps its session. Later use of it is
   * theft or a badly broken client, and ends the whole grant.
   */
  refreshGraceMs: number;
};

// Refusals that change rows (a replayed code, a replayed refresh token) commit their revocation
// first and are thrown after the transaction, which would otherwise roll the revocation back.
type Outcome = { ok: TokenResponse } | { refused: OauthError };

async function settle(run: Promise<Outcome>): Promise<TokenResponse> {
  const outcome = await run;
  if ('refused' in outcome) throw outcome.refused;
  return outcome.ok;
}

/**
 * RFC 8707 at the token endpoint: a code or refresh token bound to a resource mints tokens for that
 * one only; one bound to none may be narrowed to a resource (the endpoint checked it is ours).
 */
function narrowedResource(bound: string | null, asked: string | undefined): string | null | OauthError {
  if (asked === undefined) return bound;
  if (bound !== null && asked !== bound) {
    return new OauthError('invalid_target', `This grant is for ${bound}, not ${asked}.`);
  }
  return asked;
}

const badCode = (why: string, endedTokens = false) => new OauthError('invalid_grant', why, { endedTokens });

/**
 * grant_type=authorization_code: the code must be this client's, unused, unexpired, issued for this
 * redirect_uri, and its challenge must match the verifier (S256). A second exchange of a used code
 * revokes every token the first one started (RFC 9700 §4.5).
 * @throws OauthError invalid_grant for any mismatch.
 */
export function exchangeCode(
  pool: DatabasePool,
  client: Client,
  input: { code: string; redirectUri: string; codeVerifier: string; resource: string | undefined },
  options: GrantOptions,
): Promise<TokenResponse> {
  if (!isTokenOf('code', input.code)) return Promise.reject(badCode('The authorization code is not valid.'));
  const now = options.clock();
  return settle(
    pool.transaction(async (tx): Promise<Outcome> => {
      const code = await lockCode(tx, hashToken(input.code));
      if (!code || code.app_id !== client.appId) {
        return { refused: badCode('The authorization code is not valid.') };
      }
      if (code.used_at !== null) {
        await revokeFamily(tx, code.id);
        return { refused: badCode('The authorization code was already used; its tokens are revoked.', true) };
      }
      if (Date.parse(code.expires_at) <= now) {
        return { refused: badCode('The authorization code has expired.') };
      }
      if (code.grant_revoked_at !== null) {
        return { refused: badCode('The consent behind this code was withdrawn.') };
      }
      if (code.redirect_uri !== input.redirectUri) {
        return { refused: badCode('redirect_uri differs from the one the code was issued for.') };
      }
      if (!verifierMatches(input.codeVerifier, code.code_challenge)) {
        return { refused: badCode('code_verifier does not match the code_challenge.') };
      }
      const resource = narrowedResource(code.resource, input.resource);
      if (resource instanceof OauthError) return { refused: resource };
      await markCodeUsed(tx, code.id, isoAt(options.clock));
      const { response } = await issueTokens(tx, {
        grantId: code.grant_id,
        familyId: code.id,
        scopes: code.scopes,
        resource,
        clock: options.clock,
      });
      return { ok: response };
    }),
  );
}

const badRefresh = (why = 'The refresh token is not valid.', endedTokens = false) =>
  new OauthError('invalid_grant', why, { endedTokens });

/**
 * grant_type=refresh_token: rotates. The old refresh token and its access token stop working; the
 * new pair is sealed under the old token for the grace window, so concurrent refreshes with it all
 * receive that same pair. A rotated token used after the window revokes the whole grant.
 * @throws OauthError invalid_grant, invalid_scope.
 */
export function refreshTokens(
  pool: DatabasePool,
  client: Client,
  input: { refreshToken: string; scope: string | undefined; resource: string | undefined },
  options: GrantOptions,
): Promise<TokenResponse> {
  if (!isTokenOf('refresh', input.refreshToken)) return Promise.reject(badRefresh());
  const { clock } = options;
  return settle(
    pool.transaction(async (tx): Promise<Outcome> => {
      const token = await lockToken(tx, hashToken(input.refreshToken));
      if (!token || token.kind !== 'refresh' || token.app_id !== client.appId) {
        return { refused: badRefresh() };
      }
      if (token.grant_revoked_at !== null) {
        return { refused: badRefresh('The consent behind this token was withdrawn.') };
      }
      const now = clock();
      if (token.rotated_at !== null) {
        const pair =
          token.successor_sealed && now - Date.parse(token.rotated_at) <= options.refreshGraceMs
            ? openSuccessor(input.refreshToken, token.successor_sealed)
            : null;
        if (pair) return { ok: tokenResponse(pair, clock) };
        await revokeGrant(tx, token.grant_id);
        return { refused: badRefresh('The refresh token was already used; the grant is revoked.', true) };
      }
      if (token.revoked_at !== null) return { refused: badRefresh('The refresh token was revoked.') };
      if (Date.parse(token.expires_at) <= now) {
        return { refused: badRefresh('The refresh token has expired.') };
      }
      let scopes = token.scopes;
      if (input.scope !== undefined) {
        const asked = [...new Set(input.scope.split(' ').filter(Boolean))];
        const beyond = asked.filter((s) => !token.scopes.includes(s));
        if (beyond.length > 0) {
          return { refused: new OauthError('invalid_scope', `Not granted: ${beyond.join(' ')}.`) };
        }
        // Narrowing keeps offline_access only when asked for again (RFC 6749 §6).
        scopes = asked;
      }
      const resource = narrowedResource(token.resource, input.resource);
      if (resource instanceof OauthError) return { refused: resource };
      const issued = await issueTokens(tx, {
        grantId: token.grant_id,
        familyId: token.family_id,
        scopes,
        resource,
        clock,
      });
      await markRotated(
        tx,
        token.id,
        new Date(now).toISOString(),
        sealSuccessor(input.refreshToken, issued.pair),
      );
      return { ok: issued.response };
    }),
  );
}

/**
 * RFC 7009: ends the token when it is this client's; an unknown token, or another client's, changes
 * nothing and is not told apart (200 either way). Revoking a refresh token ends its access token too.
 */
export async function revokeClientToken(pool: DatabasePool, client: Client, token: string): Promise<boolean> {
  if (!isTokenOf('access', token) && !isTokenOf('refresh', token)) return false;
  return pool.transaction(async (tx) => {
    const row = await lockToken(tx, hashToken(token));
    if (!row || row.app_id !== client.appId) return false;
    await revokeToken(tx, row.id);
    return true;
  });
}
