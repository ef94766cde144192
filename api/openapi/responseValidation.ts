import type { NextFunction, Request, RequestHandler, Response } from 'express';
import OpenApiValidator from 'express-openapi-validator';

import { apiBasePath } from '../../shared/config/config.ts';
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
 * One validator for the whole document: each validator compiles the OpenAPI meta-schema when it
 * starts (about two seconds of CPU, whether or not it checks the document with it), so one per path
 * would cost that again for every path a test file calls. Its route lookup per response (every
 * path's pattern) costs a fraction of a millisecond, in tests only.
 */
export function makeResponseValidation(doc: ApiDocument, logger: Logger): RequestHandler {
  const chain = OpenApiValidator.middleware({
    apiSpec: structuredClone(doc.contract) as never,
    // test/unit/openapi.document.test.ts checks the document against the OpenAPI schema.
    validateApiSpec: false,
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
  return (req, res, next) => {
    // A compatible API's answers have that API's shapes, which its SDKs' tests hold them to.
    if (!req.operation?.validateBody || req.operation.base !== apiBasePath) return next();
    runChain(chain, req, res, next);
  };
}
