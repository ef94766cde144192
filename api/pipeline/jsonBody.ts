import { AppError } from '../../shared/errors/appError.ts';
import { inspectJson } from '../../shared/primitives/storableText.ts';
import { BodyReadError, maxInflationRatio } from '../body/readJsonBody.ts';
import type { Operation } from '../openapi/document.ts';
import type { OperationCall } from './operationCall.ts';

// Far beyond any schema here; deeper bodies would only exhaust the stack of whatever walks them.
export const maxBodyDepth = 64;

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

/**
 * Takes a parsed JSON body as the call's: one too deep becomes `call.bodyError`; the paths of text
 * PostgreSQL cannot store go to `call.unstorableBody`, refused after the contract checks.
 */
export function acceptJsonBody(call: OperationCall, body: unknown): void {
  const { tooDeep, unstorable } = inspectJson(body, maxBodyDepth);
  if (tooDeep) {
    call.bodyError = new AppError('invalid_request_body', 'The request body nests too deeply.', {
      issues: [{ path: 'body', message: `arrays and objects nest deeper than ${maxBodyDepth} levels` }],
    });
    return;
  }
  if (unstorable.length > 0) call.unstorableBody = unstorable;
  call.body = body;
}

/**
 * A body that arrived parsed (an MCP tool's arguments) held to what a REST body of the operation
 * may be: at most its size as JSON text, then its depth (acceptJsonBody).
 */
export function acceptParsedBody(call: OperationCall, body: unknown): void {
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > call.operation.maxBodyBytes) {
    call.bodyError = bodyError(new BodyReadError('entity.too.large', `${bytes} bytes`), call.operation);
    return;
  }
  acceptJsonBody(call, body);
}
