import type { Express, NextFunction, Request, RequestHandler, Response } from 'express';
import OpenApiValidator from 'express-openapi-validator';

import { apiBasePath } from '../../shared/config.ts';
import type { Logger } from '../../shared/logger.ts';
import type { ApiDocument } from '../openapi/document.ts';

type Options = Parameters<typeof OpenApiValidator.middleware>[0];

/** Runs express-openapi-validator's middleware chain, then `next`. */
function runChain(chain: RequestHandler[], req: Request, res: Response, next: NextFunction): void {
  const step = (i: number) => (error?: unknown) => {
    if (error !== undefined) return next(error);
    if (i === chain.length) return next();
    void chain[i]!(req, res, step(i + 1));
  };
  step(0)();
}

/**
 * Validates requests (and, when configured, responses) against the contract (openapi.yaml completed
 * with its derived error responses): handlers only ever see input that matches it. Multipart bodies
 * are streamed by their own routes, so the validator's multer is off; operations marked
 * x-svc-validate-body: false check their bodies themselves.
 *
 * One validator per path, each given the document with only that path: installOperation has already
 * matched the request to its operation, and the validator's own route lookup compiles the pattern of
 * every path it knows, in order, on every request.
 */
export function installValidator(
  app: Express,
  doc: ApiDocument,
  validateResponses: boolean,
  logger: Logger,
): void {
  // Operations without input have nothing to validate; skipping them keeps GET /me cheap. Tests
  // validate responses, so there every operation goes through the validator.
  const validated = doc.operations.filter((o) => o.validateBody && (o.hasInput || validateResponses));
  const options: Omit<Options, 'apiSpec'> = {
    validateRequests: { allowUnknownQueryParameters: false, removeAdditional: false, allErrors: true },
    validateResponses: validateResponses
      ? {
          removeAdditional: false,
          allErrors: true,
          // A response outside the contract (an error code the operation does not document, say)
          // leaves as a 500, so the test that provoked it fails, with the reason in the log.
          onError: (error, _body, req) => {
            logger.error(
              { err: error, requestId: req.requestId, path: req.path, status: req.res?.statusCode },
              'response does not match the contract',
            );
            if (req.res) req.res.statusCode = 500;
          },
        }
      : false,
    validateSecurity: false,
    validateFormats: true,
    ignoreUndocumented: true,
    fileUploader: false,
  };
  const paths = (doc.contract.paths ?? {}) as Record<string, unknown>;
  const chains = new Map<string, RequestHandler[]>();
  for (const path of new Set(validated.map((o) => o.path))) {
    const apiSpec = structuredClone({ ...doc.contract, paths: { [path]: paths[path] } });
    chains.set(
      path,
      OpenApiValidator.middleware({ ...options, apiSpec: apiSpec as never }) as RequestHandler[],
    );
  }
  const validatedOperations = new Set(validated);
  app.use(apiBasePath, (req: Request, _res: Response, next: NextFunction) => {
    if (req.bodyError !== undefined) return next(req.bodyError);
    next();
  });
  // Mounted at the root, as the validator expects: it reads the full path from the request.
  app.use((req: Request, res: Response, next: NextFunction) => {
    const operation = req.operation;
    if (!operation || !validatedOperations.has(operation)) return next();
    runChain(chains.get(operation.path)!, req, res, next);
  });
}
