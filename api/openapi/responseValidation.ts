import type { NextFunction, Request, RequestHandler, Response } from 'express';
import OpenApiValidator from 'express-openapi-validator';

import type { Logger } from '../../shared/observability/logger.ts';
import type { ApiDocument } from './document.ts';

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
 * Tests hold every JSON response of the operations the contract checks against the contract
 * (express-openapi-validator): a response outside it (an error code the operation does not
 * document, say) leaves as a 500, so the test that provoked it fails, with the reason in the log.
 * One validator per path, each given the document with only that path: the validator's own route
 * lookup compiles the pattern of every path it knows, in order, on every request.
 */
export function makeResponseValidation(doc: ApiDocument, logger: Logger): RequestHandler {
  const paths = (doc.contract.paths ?? {}) as Record<string, unknown>;
  const chains = new Map<string, RequestHandler[]>();
  for (const path of new Set(doc.operations.filter((o) => o.validateBody).map((o) => o.path))) {
    const apiSpec = structuredClone({ ...doc.contract, paths: { [path]: paths[path] } });
    const chain = OpenApiValidator.middleware({
      apiSpec: apiSpec as never,
      validateRequests: false,
      validateResponses: {
        removeAdditional: false,
        allErrors: true,
        onError: (error, _body, req) => {
          logger.error(
            { err: error, requestId: req.requestId, path: req.path, status: req.res?.statusCode },
            'response does not match the contract',
          );
          if (req.res) req.res.statusCode = 500;
        },
      },
      validateSecurity: false,
      validateFormats: true,
      ignoreUndocumented: true,
      fileUploader: false,
    }) as RequestHandler[];
    chains.set(path, chain);
  }
  return (req, res, next) => {
    const chain = req.operation?.validateBody ? chains.get(req.operation.path) : undefined;
    if (!chain) return next();
    runChain(chain, req, res, next);
  };
}
