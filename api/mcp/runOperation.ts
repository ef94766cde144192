import type { Request, RequestHandler } from 'express';

import { BodyReadError } from '../body/readJsonBody.ts';
import type { AppDeps } from '../deps.ts';
import { checkScopes } from '../middleware/installAuth.ts';
import { acceptJsonBody, bodyError } from '../middleware/installBodyParsers.ts';
import { errorBody, toAppError } from '../middleware/installErrorHandler.ts';
import { takeRequestToken } from '../middleware/installRateLimit.ts';
import { requestLogEntry } from '../middleware/installRequestLog.ts';
import { unstorableTextError } from '../middleware/installStorableText.ts';
import type { RequestValidation } from '../openapi/requestValidation.ts';
import { toolRequest, type ToolRequestInit, ToolResponse } from './toolExchange.ts';

export type OperationAnswer = { status: number; body: Record<string, unknown> };

/** Runs a REST operation for a tool call of the /mcp request `outer`; see makeOperationRunner. */
export type OperationRunner = (outer: Request, init: ToolRequestInit) => Promise<OperationAnswer>;

function runHandler(handler: RequestHandler, req: Request, res: ToolResponse): Promise<void> {
  return new Promise((resolve, reject) => {
    // A handler that calls next() has not answered: in the app that would be a 404 for a documented path.
    const next = (error?: unknown) => reject(error ?? new Error(`${req.operation!.id} passed the call on`));
    Promise.resolve(handler(req, res.asExpress(), next)).then(() => resolve(), reject);
  });
}

/**
 * A tool call runs its REST operation's own handler, in process, after the checks the app runs
 * before every handler, in its order (app.ts), from the same functions: the operation's scope and
 * the project rule, the rate limit, the body's size and depth, the contract (the compiled validator
 * the pipeline uses), storable text; then the handler, errors mapped as the error middleware maps
 * them, and the request-log entry the REST call writes. What is not repeated is done once for the
 * /mcp request: authentication (the tool call acts as its principal) and the Origin check. No
 * Idempotency-Key reaches a tool call, so there is no replay gate.
 */
export function makeOperationRunner(
  deps: AppDeps,
  handlers: Record<string, RequestHandler>,
  validation: RequestValidation,
): OperationRunner {
  const { config, logger, rateLimiter, requestLog } = deps;
  const run = async (outer: Request, req: Request, res: ToolResponse): Promise<void> => {
    const operation = req.operation!;
    // postMcp checked at start-up that every tool's operation has one.
    const handler = handlers[operation.id]!;
    checkScopes(req, config.publicBaseUrl);
    // A lone tool call is covered by the /mcp request's own token; in a batch each takes one, so a
    // batch cannot buy many calls for one request.
    if (Array.isArray(outer.body)) {
      await takeRequestToken(rateLimiter, req.principal!, config.rateLimitPerMinute);
    }
    if (req.bodyError !== undefined) throw req.bodyError;
    const invalid = await new Promise<unknown>((resolve) =>
      validation.check(req, res.asExpress(), resolve, false),
    );
    if (invalid !== undefined) throw invalid;
    const unstorable = unstorableTextError(req);
    if (unstorable) throw unstorable;
    await runHandler(handler, req, res);
    if (res.body === undefined) throw new Error(`${operation.id} answered without a JSON body`);
  };
  return async (outer, init) => {
    const res = new ToolResponse();
    const req = toolRequest(outer, res, init);
    if (init.body !== undefined) {
      // As installBodyParser reads a REST body: at most the operation's size, then its depth.
      const bytes = Buffer.byteLength(JSON.stringify(init.body));
      if (bytes > init.operation.maxBodyBytes) {
        req.bodyError = bodyError(new BodyReadError('entity.too.large', `${bytes} bytes`), init.operation);
      } else {
        acceptJsonBody(req, init.body);
      }
    }
    try {
      await run(outer, req, res);
    } catch (error) {
      const appError = toAppError(error, req, logger);
      res.status(appError.status).json(errorBody(appError, req.requestId));
    }
    requestLog.push(requestLogEntry(req, res.asExpress()));
    const locals = outer.res!.locals;
    locals.toolEntries = (locals.toolEntries ?? 0) + 1;
    return { status: res.statusCode, body: res.body as Record<string, unknown> };
  };
}
