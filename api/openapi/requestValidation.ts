import type { NextFunction, Request, RequestHandler, Response } from 'express';
import OpenApiValidator from 'express-openapi-validator';

import { apiBasePath } from '../../shared/config.ts';
import type { Logger } from '../../shared/logger.ts';
import type { ApiDocument, NumericParameter, Operation } from './document.ts';

type Options = Parameters<typeof OpenApiValidator.middleware>[0];

/** The shape express-openapi-validator reports request problems in (installErrorHandler maps it). */
type ValidationError = Error & {
  status: number;
  errors: { path: string; message: string; errorCode?: string }[];
};
type Problem = ValidationError['errors'][number];

const validationError = (errors: Problem[]): ValidationError =>
  Object.assign(new Error('request validation failed'), { status: 400, errors });

const isValidationError = (error: unknown): error is ValidationError =>
  error instanceof Error && Array.isArray((error as Partial<ValidationError>).errors);

// The validator coerces parameters with ajv's coerceTypes, which takes whatever JavaScript's
// Number() takes ('Infinity', '0x10', '1e2', ' 5', '+5'), so raw values are held to these forms
// first. A leading zero is refused too: '010' is ten here but eight to some parsers, and no
// serialiser writes it; nor is '-0' the integer zero's canonical form.
const canonicalInteger = /^(?:0|-?[1-9][0-9]*)$/;
const canonicalNumber = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?$/;

function rawValue(req: Request, operation: Operation, param: NumericParameter): unknown {
  if (param.in === 'query') return req.query[param.name];
  if (param.in === 'header') return req.get(param.name);
  // Mounted at the root, so the path still carries the API base (in whatever case it was sent).
  const segment = operation.matcher.exec(req.path.slice(apiBasePath.length))?.[param.position + 1];
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Integer and number parameters whose raw value is not a canonical decimal (or, for an integer,
 * not one a JavaScript number holds exactly), before ajv coerces them. Bounds (minimum, maximum)
 * stay the schema's to check on the exact value.
 */
function malformedNumbers(req: Request, operation: Operation): Problem[] {
  const problems: Problem[] = [];
  for (const param of operation.numericParameters) {
    const value = rawValue(req, operation, param);
    // Absent, empty and repeated values are the validator's to report.
    if (typeof value !== 'string' || value === '') continue;
    const where = param.in === 'header' ? 'headers' : param.in === 'path' ? 'params' : 'query';
    const path = `/${where}/${param.in === 'header' ? param.name.toLowerCase() : param.name}`;
    if (param.integer && !(canonicalInteger.test(value) && Number.isSafeInteger(Number(value)))) {
      problems.push({
        path,
        message:
          'must be a decimal integer (digits with an optional leading -, no leading zeros) of at most 9007199254740991 in magnitude',
        errorCode: 'type.openapi.validation',
      });
    } else if (!param.integer && !canonicalNumber.test(value)) {
      problems.push({
        path,
        message:
          'must be a decimal number (digits, an optional leading - and fraction, no leading zeros or exponent)',
        errorCode: 'type.openapi.validation',
      });
    }
  }
  return problems;
}

/** The validator's own problems and ours in one error; ours replace its report on the same value. */
function withMalformed(malformed: Problem[], error: unknown): unknown {
  if (malformed.length === 0) return error;
  if (error === undefined) return validationError(malformed);
  if (!isValidationError(error)) return error;
  const ours = new Set(malformed.map((p) => p.path));
  return Object.assign(error, { errors: [...malformed, ...error.errors.filter((e) => !ours.has(e.path))] });
}

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
 * The contract's checks of one request, compiled once per app and shared by the HTTP pipeline
 * (installValidator) and MCP tool calls, which run an operation's handler without a second pass
 * through the app: both see exactly the same verdicts.
 */
export type RequestValidation = {
  /**
   * Checks `req` (its operation resolved) against the contract and calls `done` with the problem,
   * in express-openapi-validator's shape, or nothing. `responses: false` leaves out the response
   * check (when configured): a tool call's answer is no HTTP response to hook.
   */
  check(req: Request, res: Response, done: (error?: unknown) => void, responses?: boolean): void;
};

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
export function makeRequestValidation(
  doc: ApiDocument,
  validateResponses: boolean,
  logger: Logger,
): RequestValidation {
  // Operations without input have nothing to validate but an empty query string; skipping the
  // validator keeps GET /me cheap. Tests validate responses, so there every operation goes through it.
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
  const chains = new Map<string, { all: RequestHandler[]; requestOnly: RequestHandler[] }>();
  for (const path of new Set(validated.map((o) => o.path))) {
    const apiSpec = structuredClone({ ...doc.contract, paths: { [path]: paths[path] } });
    const all = OpenApiValidator.middleware({ ...options, apiSpec: apiSpec as never }) as RequestHandler[];
    // The response check is the validator's last middleware, named so in its source; the same
    // compiled request checks run either way. A release that renames it must fail here, not run
    // the response hook on a tool call's in-memory response.
    const requestOnly = all.filter((mw) => mw.name !== 'responseMiddleware');
    if (validateResponses && requestOnly.length === all.length) {
      throw new Error(
        'express-openapi-validator: its response middleware is no longer named responseMiddleware',
      );
    }
    chains.set(path, { all, requestOnly });
  }
  const validatedOperations = new Set(validated);
  return {
    check(req, res, done, responses = true) {
      const operation = req.operation!;
      const malformed = malformedNumbers(req, operation);
      if (validatedOperations.has(operation)) {
        const chain = chains.get(operation.path)!;
        runChain(responses ? chain.all : chain.requestOnly, req, res, (error?: unknown) =>
          done(withMalformed(malformed, error)),
        );
        return;
      }
      // What the validator would say to a query string on an operation that declares no parameters.
      // (req.query parses the URL on every read: the hot input-less GETs mostly have no query string.)
      const unknown = operation.hasInput || !req.url.includes('?') ? [] : Object.keys(req.query);
      const problems = unknown.map((name) => ({
        path: `/query/${name}`,
        message: `Unknown query parameter '${name}'`,
      }));
      done(withMalformed([...malformed, ...problems], undefined));
    },
  };
}
