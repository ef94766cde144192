import type { Express, Request } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { inspectJson } from '../../shared/storableText.ts';
import { BodyReadError, maxInflationRatio, readJsonText } from '../body/readJsonBody.ts';
import type { Operation } from '../openapi/document.ts';

// Far beyond any schema here; deeper bodies would only exhaust the stack of whatever walks them.
export const maxBodyDepth = 64;
const jsonTypes = ['application/json', 'application/*+json'];

/**
 * What the caller gets for a body that could not be read. A body over the operation's limit is
 * file_too_large where the operation takes files (its spec lists that code), otherwise a schema
 * problem: the limit sits above the largest body the schema allows.
 */
export function bodyError(error: unknown, operation?: Operation): AppError {
  const type = (error as { type?: unknown } | null)?.type;
  const invalid = (path: string, message: string, detail: string) =>
    new AppError('invalid_request_body', message, { issues: [{ path, message: detail }], cause: error });
  switch (type) {
    case 'entity.too.large':
      if (operation?.errorCodes.includes('file_too_large')) {
        return new AppError('file_too_large', 'The request body is larger than this endpoint accepts.');
      }
      return invalid(
        'body',
        'The request body is larger than this endpoint accepts.',
        `at most ${operation?.maxBodyBytes ?? 0} bytes (decompressed)`,
      );
    case 'entity.inflation':
      return invalid(
        'content-encoding',
        'The compressed request body inflates too much.',
        `a compressed body may inflate at most ${maxInflationRatio}-fold`,
      );
    case 'entity.parse.failed':
      return invalid('body', 'The request body is not valid JSON.', 'malformed JSON');
    case 'encoding.unsupported':
      return invalid('content-encoding', 'Unsupported Content-Encoding.', 'use gzip, deflate, br or none');
    case 'charset.unsupported':
      return invalid('content-type', 'Unsupported charset.', 'send JSON as UTF-8');
    case 'request.size.invalid':
      return invalid('content-length', 'The body is not as long as Content-Length says.', 'length mismatch');
    default:
      return invalid('body', 'The request body could not be read.', 'unreadable or wrongly compressed body');
  }
}

function parseJson(text: string): unknown {
  // As body-parser's strict mode: an empty body is an empty object, anything else an object or array.
  if (text.trim() === '') return {};
  if (!/^[\s]*[[{]/.test(text)) throw new BodyReadError('entity.parse.failed', 'not a JSON object or array');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new BodyReadError('entity.parse.failed', (error as Error).message);
  }
}

/**
 * Takes a parsed JSON body as the request's: one too deep becomes `req.bodyError`; the paths of text
 * PostgreSQL cannot store go to `req.unstorableBody`, refused after the schema checks.
 */
export function acceptJsonBody(req: Request, body: unknown): void {
  const { tooDeep, unstorable } = inspectJson(body, maxBodyDepth);
  if (tooDeep) {
    req.bodyError = new AppError('invalid_request_body', 'The request body nests too deeply.', {
      issues: [{ path: 'body', message: `arrays and objects nest deeper than ${maxBodyDepth} levels` }],
    });
    return;
  }
  if (unstorable.length > 0) req.unstorableBody = unstorable;
  req.body = body;
}

/**
 * Reads the JSON body of an operation that takes one, once the caller is authenticated (installed
 * after installAuthentication), holding at most the operation's `maxBodyBytes` (OpenAPI
 * `x-svc-max-body-bytes`). A body that cannot be read is kept on `req.bodyError` and answered after
 * the scope checks and the rate limit (DESIGN.md check order); one abandoned half-read closes the
 * connection with the answer.
 */
export function installBodyParser(app: Express): void {
  app.use(apiBasePath, async (req, res, next) => {
    const operation = req.operation;
    const hasBody =
      req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
    if (!operation?.hasJsonBody || !hasBody || !req.is(jsonTypes)) return next();
    try {
      acceptJsonBody(req, parseJson(await readJsonText(req, operation.maxBodyBytes)));
    } catch (error) {
      if (!(error instanceof BodyReadError)) throw error;
      if (error.abandoned) res.setHeader('Connection', 'close');
      req.bodyError = bodyError(error, operation);
    }
    next();
  });
}
