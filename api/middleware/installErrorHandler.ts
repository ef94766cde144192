import type { ErrorRequestHandler, Express } from 'express';

import { IdempotencyRace } from '../../shared/idempotency/idempotencyStore.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { ClientGoneError } from '../http/clientGone.ts';
import type { RequestIdempotency } from '../idempotency/requestIdempotency.ts';
import { errorBody, toAppError } from '../pipeline/appErrors.ts';

/**
 * The one error middleware: every failure leaves as the spec's envelope with the request id. A
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
    for (const [name, value] of Object.entries(appError.headers ?? {})) res.setHeader(name, value);
    const body = errorBody(appError, req.requestId);
    await idempotency?.storeRefusal(req, appError.status, body);
    res.status(appError.status).json(body);
  };
  app.use(handler);
}
