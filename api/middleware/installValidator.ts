import type { Express, NextFunction, Request, Response } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import type { RequestValidation } from '../openapi/requestValidation.ts';

/** Answers a body that could not be read, then runs the contract's checks (requestValidation.ts). */
export function installValidator(app: Express, validation: RequestValidation): void {
  app.use(apiBasePath, (req: Request, _res: Response, next: NextFunction) => {
    // An operation that validates its own body (POST /mcp answers bad JSON in JSON-RPC) reads the error itself.
    if (req.bodyError !== undefined && req.operation?.validateBody !== false) return next(req.bodyError);
    next();
  });
  // Mounted at the root, as the validator expects: it reads the full path from the request.
  app.use((req: Request, res: Response, next: NextFunction) => {
    if (!req.operation) return next();
    validation.check(req, res, next);
  });
}
