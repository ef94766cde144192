import { AppError } from '../../shared/errors/appError.ts';
import {
  type IdempotencyStore,
  type ReplayedAnswer,
  requestHash,
} from '../../shared/idempotency/idempotencyStore.ts';
import type { RateLimiter, RateWindow } from '../auth/rateLimiter.ts';
import { headerOf, type OperationCall } from './operationCall.ts';

/**
 * Takes one call from the workspace's budget per minute, shared by every api process (see
 * RateLimiter); a call whose token was taken already (a lone MCP tool call) takes none.
 * @throws AppError rate_limited, with Retry-After.
 */
export function rateLimit(limiter: RateLimiter, defaultPerMinute: number) {
  return async (call: OperationCall): Promise<void> => {
    const principal = call.principal;
    if (!principal || call.tokenTaken) return;
    call.tokenTaken = true;
    const decision = await limiter.take(
      principal.workspaceId,
      principal.rateLimitPerMinute ?? defaultPerMinute,
    );
    call.answerHeaders = requestHeaders(decision.window);
    if (!decision.allowed) {
      throw new AppError(
        'rate_limited',
        `Too many requests for this workspace; retry after ${decision.retryAfterSeconds} s.`,
        { headers: { 'Retry-After': String(decision.retryAfterSeconds), ...call.answerHeaders } },
      );
    }
  };
}

/** OpenAI's names for the request limit (docs/providers.md#limits); tokens: shared/limits/tokenLimits.ts. */
function requestHeaders(window: RateWindow): Record<string, string> {
  return {
    'x-ratelimit-limit-requests': String(window.limit),
    'x-ratelimit-remaining-requests': String(window.remaining),
    'x-ratelimit-reset-requests': `${Math.max(1, Math.ceil(window.resetMs / 1000))}s`,
  };
}

function isStreaming(body: unknown, accept: string | undefined): boolean {
  return (
    (body as { stream?: unknown } | undefined)?.stream === true ||
    (accept ?? '').includes('text/event-stream')
  );
}

/**
 * The Idempotency-Key gate of JSON operations marked x-svc-idempotent (see IdempotencyStore): a
 * stored answer is the call's answer; otherwise the operation runs with `call.idempotency` and
 * records its answer with its work. Multipart operations open the gate themselves once their body
 * is read (its bytes are part of what makes a request "the same").
 */
export function idempotencyGate(store: IdempotencyStore) {
  return (call: OperationCall): Promise<ReplayedAnswer | undefined> | undefined => {
    const key = headerOf(call, 'idempotency-key');
    if (key === undefined || !call.principal || !call.operation.idempotent || !call.operation.hasJsonBody) {
      return undefined;
    }
    // A stream cannot be replayed; the key is ignored rather than half-honoured.
    if (isStreaming(call.body, headerOf(call, 'accept'))) return undefined;
    return store.open(call, key, requestHash(call, call.body));
  };
}
