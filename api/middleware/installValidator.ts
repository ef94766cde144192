import type { Express, NextFunction, Request, Response } from 'express';
import OpenApiValidator from 'express-openapi-validator';

import { apiBasePath } from '../../shared/config.ts';
import type { ApiDocument } from '../openapi/document.ts';

/**
 * Validates requests (and, when configured, responses) against openapi.yaml: handlers only ever see
 * input that matches the contract. Multipart bodies are streamed by their own routes, so the
 * validator's multer is off; operations marked x-svc-validate-body: false check their bodies themselves.
 */
export function installValidator(app: Express, doc: ApiDocument, validateResponses: boolean): void {
  // Operations without input have nothing to validate; skipping them keeps GET /me cheap. Tests
  // validate responses, so there every operation goes through the validator.
  const unvalidated = new Set(
    doc.operations
      .filter((o) => !o.validateBody || (!o.hasInput && !validateResponses))
      .map((o) => apiBasePath + o.path),
  );
  app.use(apiBasePath, (req: Request, _res: Response, next: NextFunction) => {
    if (req.bodyError !== undefined) return next(req.bodyError);
    next();
  });
  app.use(
    OpenApiValidator.middleware({
      apiSpec: structuredClone(doc.raw) as never,
      validateRequests: { allowUnknownQueryParameters: false, removeAdditional: false, allErrors: true },
      validateResponses: validateResponses ? { removeAdditional: false, allErrors: true } : false,
      validateSecurity: false,
      validateFormats: true,
      ignoreUndocumented: true,
      ignorePaths: (path: string) => !path.startsWith(apiBasePath) || unvalidated.has(path),
      fileUploader: false,
    }),
  );
}
