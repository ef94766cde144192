import type { DatabasePool } from 'slonik';

import type { Principal } from '../../shared/auth/principal.ts';
import {
  type AccessTokenAuthRow,
  findAccessTokenForAuth,
  touchToken,
} from '../../shared/db/queries/oauthTokens.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { hashToken, isTokenOf } from '../../shared/oauth/tokens.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { type Clock, systemClock } from '../../shared/primitives/clock.ts';
import type { NotificationHub } from '../../shared/realtime/pubsub.ts';
import type { CredentialResolver } from './authenticate.ts';
import { KeyCache } from './keyCache.ts';

// The account page shows "last used"; a write per request would cost more than it tells.
const touchEveryMs = 60_000;

/** The principal of an access token: the person's member in the workspace chosen at consent, acting in the app's project. */
export function toTokenPrincipal(row: AccessTokenAuthRow): Principal {
  return {
    credentialType: 'oauth_access_token',
    // The consent, not the token: idempotency keys and logs survive the hourly rotation.
    credentialId: row.grant_id,
    keyId: null,
    oauthAppId: row.app_id,
    name: row.app_name,
    hint: row.hint,
    workspaceId: row.workspace_id,
    currency: row.currency,
    memberId: row.member_id,
    livemode: true,
    // offline_access, openid, profile and email are no operations: only catalogue ids open operations.
    scope: { level: 'operation', packages: [], operations: row.scopes },
    projects: row.projects,
    monthlySpendCapMinor: null,
    rateLimitPerMinute: row.rate_limit_per_minute,
    tokensPerMinute: row.tokens_per_minute,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    audience: row.resource,
  };
}

/**
 * `Authorization: Bearer svc_at_…` on the public API, checked like a key (unknown, revoked, expired),
 * through a cache emptied by the same `auth:changed` notifications: a revoked token, a withdrawn
 * consent or a member removed from the workspace stop every api process at once.
 */
export function accessTokenAuth(
  pool: DatabasePool,
  hub: NotificationHub,
  logger: Logger,
  clock: Clock = systemClock,
): { resolve: CredentialResolver; cache: KeyCache<AccessTokenAuthRow> } {
  const cache = new KeyCache<AccessTokenAuthRow>(pool, hub, findAccessTokenForAuth);
  const touched = new Map<string, number>();
  const resolve: CredentialResolver = async (credential) => {
    if (!credential.startsWith('svc_at_')) return undefined;
    if (!isTokenOf('access', credential)) return undefined;
    const row = await cache.find(hashToken(credential));
    if (!row) return undefined;
    if (row.revoked_at !== null) throw new AppError('api_key_revoked', 'This access token has been revoked.');
    if (row.expires_at !== null && Date.parse(row.expires_at) <= clock()) {
      throw new AppError('api_key_expired', 'This access token has expired; refresh it.');
    }
    const now = Date.now();
    if ((touched.get(row.id) ?? 0) + touchEveryMs < now) {
      touched.set(row.id, now);
      if (touched.size > 10_000) touched.clear();
      touchToken(pool, row.id, row.grant_id).catch((error: unknown) =>
        logger.warn({ err: error }, 'token last use not recorded'),
      );
    }
    return toTokenPrincipal(row);
  };
  return { resolve, cache };
}
