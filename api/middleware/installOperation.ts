import type { Express } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { type ApiDocument, matchOperation } from '../openapi/document.ts';

/** Resolves which OpenAPI operation a request addresses; unknown paths and wrong methods end here. */
export function installOperation(app: Express, doc: ApiDocument): void {
  app.use(apiBasePath, (req, res, next) => {
    const match = matchOperation(doc, req.method, req.path);
    if (match.operation) {
      req.operation = match.operation;
      return next();
    }
    if (match.methods.length > 0) {
      res.setHeader('Allow', match.methods.join(', '));
      throw new AppError(
        'method_not_allowed',
        `${req.method} is not supported on this path; use ${match.methods.join(' or ')}.`,
      );
    }
    throw new AppError('not_found', `No endpoint ${req.method} ${apiBasePath}${req.path}.`);
  });
}
