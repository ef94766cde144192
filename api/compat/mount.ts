import { type Express, Router } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import type { AppDeps } from '../deps.ts';
import type { OperationPipeline } from '../pipeline/pipeline.ts';
import type { CompatApi } from './compatApi.ts';

/**
 * Mounts a compatible API at its base: its errors take its shape from the first middleware on
 * (an unknown key is refused in OpenAI's words on an OpenAI path), then the operation pipeline the
 * API's own operations run through (authentication, scopes, rate and token limits, validation,
 * Idempotency-Key, the request log under the operation's own id), then its handlers.
 * @throws Error at start-up when the document mounts an operation at the base that has no handler.
 */
export function mountCompat(app: Express, deps: AppDeps, pipeline: OperationPipeline, api: CompatApi): void {
  const router = Router({ caseSensitive: true });
  router.use((req, res, next) => {
    res.locals.errorShape = api.shapeError;
    const credential = api.credentialOf?.(req.headers);
    // An Authorization header wins: it is what the pipeline (and every other API path) reads.
    if (credential !== undefined && req.headers.authorization === undefined) {
      req.headers.authorization = `Bearer ${credential}`;
    }
    next();
  });
  router.use(pipeline.restAt(api.base));
  const handlers = api.handlers(deps);
  for (const op of deps.doc.operations) {
    if (op.base !== api.base) continue;
    const handler = handlers[op.id];
    if (!handler) throw new Error(`no handler for ${op.id} (${op.method} ${op.documentPath})`);
    const expressPath = op.path.replace(/\{([^}]+)\}/g, ':$1');
    router[op.method.toLowerCase() as 'get' | 'post'](expressPath, handler);
  }
  router.use((req) => {
    throw new AppError('not_found', `No endpoint ${req.method} ${api.base}${req.path}.`);
  });
  app.use(api.base, router);
}
