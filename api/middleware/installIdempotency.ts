import { createHash } from 'node:crypto';

import type { Express } from 'express';
import type { DatabasePool } from 'slonik';

import { apiBasePath } from '../../shared/config.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  releaseIdempotencyKey,
} from '../../shared/db/queries/idempotencyKeys.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { Logger } from '../../shared/logger.ts';

/** Key order must not matter: `{a,b}` and `{b,a}` are the same request. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

function locationOf(header: unknown): string | null {
  return typeof header === 'string' ? header : null;
}

function isStreaming(body: unknown, accept: string | undefined): boolean {
  return (
    (body as { stream?: unknown } | undefined)?.stream === true ||
    (accept ?? '').includes('text/event-stream')
  );
}

/**
 * Idempotency-Key on POSTs that create something (x-svc-idempotent), kept 24 h per credential.
 * The stored response is written before the first response leaves, so an immediate retry replays it.
 * 5xx answers are not kept: the caller should be able to retry those.
 */
export function installIdempotency(
  app: Express,
  pool: DatabasePool,
  logger: Logger,
  lockSeconds: number,
): void {
  app.use(apiBasePath, async (req, res, next) => {
    const key = req.get('idempotency-key');
    const principal = req.principal;
    if (key === undefined || !principal || !req.operation?.idempotent) return next();
    // A stream cannot be replayed; the key is ignored rather than half-honoured.
    if (isStreaming(req.body, req.get('accept'))) return next();
    const hash = createHash('sha256')
      .update(`${req.method} ${req.path}\n${JSON.stringify(canonical(req.body ?? null))}`)
      .digest('hex');
    const entry = await claimIdempotencyKey(pool, principal.credentialId, key, hash, lockSeconds);
    if (!entry.claimed) {
      if (entry.request_hash !== hash) {
        throw new AppError(
          'idempotency_key_reused',
          'This Idempotency-Key was used with a different request body.',
        );
      }
      if (entry.status === 'done') {
        res.setHeader('Idempotent-Replayed', 'true');
        if (entry.response_location !== null) res.location(entry.response_location);
        res.status(entry.response_status ?? 200).json(entry.response_body);
        return;
      }
      throw new AppError(
        'idempotency_request_in_progress',
        'The first request with this Idempotency-Key is still running.',
      );
    }
    const json = res.json.bind(res);
    res.json = (body: unknown) => {
      const status = res.statusCode;
      const persist =
        status >= 500
          ? releaseIdempotencyKey(pool, principal.credentialId, key)
          : completeIdempotencyKey(
              pool,
              principal.credentialId,
              key,
              status,
              body,
              locationOf(res.getHeader('location')),
            );
      persist
        .catch((error: unknown) =>
          logger.error({ err: error, requestId: req.requestId }, 'idempotency write failed'),
        )
        .finally(() => json(body));
      return res;
    };
    next();
  });
}
