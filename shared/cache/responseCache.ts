import type { Principal } from '../auth/principal.ts';
import type { Config } from '../config/config.ts';
import type { RoutedCapability } from '../config/providersConfig.ts';
import { findResponseCacheEntry, upsertResponseCacheEntry } from '../db/queries/responseCacheEntries.ts';
import type { DatabasePool } from '../db/sql.ts';
import { responseCacheKey, routeIdentity } from './cacheKey.ts';

/** One call that asked for the cache (Cache-TTL): who, what, and for how long an answer may be kept. */
export type CacheableCall = {
  principal: Principal;
  capability: RoutedCapability;
  operation: string;
  /** The validated request, as far as it decides the answer (not the project, not `stream`). */
  request: Record<string, unknown>;
  ttlSeconds: number;
};

export type CacheLookup =
  | { status: 'hit'; key: string; answer: Record<string, unknown>; ttlSeconds: number }
  | { status: 'miss'; key: string };

export type StoreOutcome = 'stored' | 'too-large' | 'workspace-full';

type Deps = { pool: DatabasePool; config: Pick<Config, 'providers' | 'responseCache'> };

/**
 * The opt-in response cache: exact-match answers per workspace, kept in PostgreSQL so every api
 * process shares them. Test keys never come here (their fixtures are the answer; the caller checks).
 */
export function makeResponseCache(deps: Deps) {
  const keyOf = (call: CacheableCall) =>
    responseCacheKey({
      capability: call.capability,
      livemode: call.principal.livemode,
      route: routeIdentity(deps.config.providers, call.capability),
      request: call.request,
    });
  return {
    keyOf,
    /** The live entry for the call's request in its own workspace, if any. */
    async lookup(call: CacheableCall): Promise<CacheLookup> {
      const key = keyOf(call);
      const found = await findResponseCacheEntry(deps.pool, call.principal.workspaceId, key);
      if (found === null) return { status: 'miss', key };
      return {
        status: 'hit',
        key,
        answer: found.answer as Record<string, unknown>,
        ttlSeconds: found.ttl_seconds,
      };
    },
    /**
     * Keeps an answer (without its cost: a hit is charged its own) for the call's TTL, unless it is
     * larger than RESPONSE_CACHE_MAX_ENTRY_BYTES or the workspace's live entries would pass
     * RESPONSE_CACHE_MAX_WORKSPACE_BYTES; then the answer is simply not kept.
     */
    async store(call: CacheableCall, key: string, answer: Record<string, unknown>): Promise<StoreOutcome> {
      const answerJson = JSON.stringify(answer);
      const limits = deps.config.responseCache;
      if (Buffer.byteLength(answerJson) > limits.maxEntryBytes) return 'too-large';
      const stored = await upsertResponseCacheEntry(
        deps.pool,
        {
          workspaceId: call.principal.workspaceId,
          key,
          operation: call.operation,
          answerJson,
          ttlSeconds: call.ttlSeconds,
        },
        limits.maxWorkspaceBytes,
      );
      return stored ? 'stored' : 'workspace-full';
    },
  };
}

export type ResponseCache = ReturnType<typeof makeResponseCache>;
