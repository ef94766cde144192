import express, { type Express } from 'express';

import { AppError } from '../../shared/errors/appError.ts';
import { inspectJson } from '../../shared/storableText.ts';

// Base64 OCR data may be 20 MiB of bytes, about 27 MiB of text.
const jsonLimit = '28mb';
// Far beyond any schema here; deeper bodies would only exhaust the stack of whatever walks them.
const maxDepth = 64;

type ParserError = { type?: unknown };

/**
 * What the caller gets for a body that could not be read. body-parser tags most failures with a
 * `type`; a body that fails to decompress is a plain 400 without one, and is the caller's fault too.
 */
export function bodyError(error: unknown): AppError {
  const type = (error as ParserError | null)?.type;
  const invalid = (path: string, message: string, detail: string) =>
    new AppError('invalid_request_body', message, { issues: [{ path, message: detail }], cause: error });
  switch (type) {
    case 'entity.too.large':
      return new AppError('file_too_large', 'The request body is larger than this endpoint accepts.');
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

/**
 * Parses JSON bodies. A body that fails to parse is kept on `req.bodyError` rather than answered at
 * once, so a request with a bad key still gets the authentication error first (DESIGN.md check order).
 */
export function installBodyParsers(app: Express): void {
  const json = express.json({ limit: jsonLimit, type: ['application/json', 'application/*+json'] });
  app.use((req, res, next) => {
    json(req, res, (error?: unknown) => {
      if (error) {
        req.bodyError = bodyError(error);
        req.body = undefined;
      } else {
        const { tooDeep, unstorable } = inspectJson(req.body, maxDepth);
        if (tooDeep) {
          req.bodyError = new AppError('invalid_request_body', 'The request body nests too deeply.', {
            issues: [{ path: 'body', message: `arrays and objects nest deeper than ${maxDepth} levels` }],
          });
          req.body = undefined;
        } else if (unstorable.length > 0) {
          req.unstorableBody = unstorable;
        }
      }
      next();
    });
  });
}
