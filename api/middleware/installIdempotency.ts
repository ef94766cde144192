import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { type IdempotencyStore, requestHash } from '../idempotency.ts';

function isStreaming(body: unknown, accept: string | undefined): boolean {
  return (
    (body as { stream?: unknown } | undefined)?.stream === true ||
    (accept ?? '').includes('text/event-stream')
  );
}

/**
 * The Idempotency-Key gate of JSON operations marked x-svc-idempotent (see IdempotencyStore): a
 * stored answer is replayed here; otherwise the handler runs with `req.idempotency` and records its
 * answer with its work. Multipart operations open the gate themselves once their body is read (its
 * bytes are part of what makes a request "the same").
 */
export function installIdempotency(app: Express, store: IdempotencyStore): void {
  app.use(apiBasePath, async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key === undefined || !req.principal || !req.operation?.idempotent || !req.operation.hasJsonBody) {
      return next();
    }
    // A stream cannot be replayed; the key is ignored rather than half-honoured.
    if (isStreaming(req.body, req.get('accept'))) return next();
    if (await store.open(req, res, key, requestHash(req, req.body))) return;
    next();
  });
}
