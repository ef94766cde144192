import type { Config } from '../../shared/config/config.ts';
import type { IdempotencyStore, ReplayedAnswer } from '../../shared/idempotency/idempotencyStore.ts';
import type { CredentialResolver } from '../auth/authenticate.ts';
import type { FailedAuthLimiter } from '../auth/failedAuthLimiter.ts';
import type { KeyCache } from '../auth/keyCache.ts';
import type { RateLimiter } from '../auth/rateLimiter.ts';
import type { RequestValidation } from '../openapi/requestValidation.ts';
import { authentication, mcpOrigin, scopes } from './accessChecks.ts';
import { idempotencyGate, rateLimit } from './callChecks.ts';
import { contract, reportBodyError, storableText } from './inputChecks.ts';
import type { OperationCall } from './operationCall.ts';

/** One check: throws what the call is answered with, or returns a stored answer to replay. */
export type Check = (
  call: OperationCall,
) => void | ReplayedAnswer | Promise<void | ReplayedAnswer | undefined>;

export type CheckDeps = {
  config: Pick<Config, 'publicBaseUrl' | 'mcpAllowedOrigins' | 'rateLimitPerMinute'>;
  keyCache: KeyCache;
  credentialResolvers: CredentialResolver[];
  failedAuth: FailedAuthLimiter;
  rateLimiter: RateLimiter;
  idempotency: IdempotencyStore;
  validation: RequestValidation;
};

/**
 * The checks before every operation's handler, in DESIGN.md's order, written once. `caller` runs
 * once per HTTP request, from its headers alone, before any body is read (a tool call of POST /mcp
 * acts as that request's caller); then the body is taken (read from the socket, or the tool's
 * arguments), and `call` runs for every operation call.
 */
export function makeChecks(deps: CheckDeps): { caller: Check[]; call: Check[] } {
  const { config } = deps;
  return {
    caller: [
      mcpOrigin(config),
      authentication({
        keys: deps.keyCache,
        resolvers: deps.credentialResolvers,
        failures: deps.failedAuth,
        publicBaseUrl: config.publicBaseUrl,
      }),
    ],
    call: [
      scopes(config.publicBaseUrl),
      rateLimit(deps.rateLimiter, config.rateLimitPerMinute),
      reportBodyError,
      contract(deps.validation),
      storableText,
      idempotencyGate(deps.idempotency),
    ],
  };
}

/** Runs checks in order; a replayed answer ends them. */
export async function runChecks(checks: Check[], call: OperationCall): Promise<ReplayedAnswer | undefined> {
  for (const check of checks) {
    const result = check(call);
    // Most checks are synchronous: only a promise is waited for, so GET /me pays no needless ticks.
    const replayed = result instanceof Promise ? await result : result;
    if (replayed) return replayed;
  }
  return undefined;
}
