import type { ErrorRequestHandler, Express } from 'express';

import { IdempotencyRace } from '../../shared/idempotency/idempotencyStore.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { ClientGoneError } from '../http/clientGone.ts';
import type { RequestIdempotency } from '../idempotency/requestIdempotency.ts';
import { errorBody, toAppError } from '../pipeline/appErrors.ts';

/**
 * The one error middleware: every failure leaves as the spec's envelope with the request id (or, on
 * a compatible API's path, as that API's error: `res.locals.errorShape`). A
 * request that lost an Idempotency-Key race answers as its retry would; a refusal a handler gave
 * before any work committed is stored under the request's key.
 */
export function installErrorHandler(app: Express, logger: Logger, idempotency?: RequestIdempotency): void {
  const handler: ErrorRequestHandler = async (error, req, res, next) => {
    if (error instanceof IdempotencyRace && idempotency && !res.headersSent) {
      try {
        return await idempotency.answerRace(req, res);
      } catch (raced) {
        return handler(raced, req, res, next);
      }
    }
    if (error instanceof ClientGoneError) {
      logger.info({ requestId: req.requestId, path: req.path }, 'client left before the answer');
      res.end();
      return;
    }
    const appError = toAppError(error, req, logger);
    if (res.headersSent) {
      // A streamed response already started: the only honest thing left is to end it.
      res.end();
      return;
    }
    // A compatible API's request answers in that API's shape (api/compat/mount.ts sets the shaper).
    const shaped = res.locals.errorShape?.(appError, req.requestId) ?? {
      status: appError.status,
      body: errorBody(appError, req.requestId),
      headers: appError.headers ?? {},
    };
    for (const [name, value] of Object.entries(shaped.headers)) res.setHeader(name, value);
    await idempotency?.storeRefusal(req, shaped.status, shaped.body);
    res.status(shaped.status).json(shaped.body);
  };
  app.use(handler);
}
