import type { Request, Response } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { BodyReadError, readJsonText } from '../body/readJsonBody.ts';
import { type ApiDocument, matchOperation } from '../openapi/document.ts';
import { acceptJsonBody, bodyError } from './jsonBody.ts';
import type { OperationCall } from './operationCall.ts';

const jsonTypes = ['application/json', 'application/*+json'];

function decoded(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    // A malformed escape is the router's to answer, as it was before the call existed.
    return segment;
  }
}

/**
 * The operation call of a REST request below `base` (the API's, or a compatible API's), read once
 * from the Express request;
 * unknown paths and wrong methods end here, nothing read.
 * @throws AppError not_found, method_not_allowed (with Allow).
 */
export function restCall(doc: ApiDocument, req: Request, res: Response, base = apiBasePath): OperationCall {
  const match = matchOperation(doc, req.method, req.path, base);
  if (!match.operation) {
    if (match.methods.length > 0) {
      res.setHeader('Allow', match.methods.join(', '));
      throw new AppError(
        'method_not_allowed',
        `${req.method} is not supported on this path; use ${match.methods.join(' or ')}.`,
      );
    }
    throw new AppError('not_found', `No endpoint ${req.method} ${base}${req.path}.`);
  }
  const { operation } = match;
  const params: Record<string, string> = {};
  const names = operation.path.match(/\{[^}]+\}/g) ?? [];
  names.forEach((name, i) => (params[name.slice(1, -1)] = decoded(match.params[i]!)));
  const queryAt = req.originalUrl.indexOf('?');
  return {
    operation,
    requestId: req.requestId,
    startedAt: req.startedAt,
    ip: req.ip,
    method: req.method,
    path: req.path,
    fullPath: queryAt === -1 ? req.originalUrl : req.originalUrl.slice(0, queryAt),
    params,
    // Express parses the query string on every read of req.query: read once, and only when there is one.
    query: queryAt === -1 ? {} : (req.query as Record<string, unknown>),
    rawQuery: queryAt === -1 ? undefined : req.originalUrl.slice(queryAt + 1),
    headers: req.headers,
    body: undefined,
    tokenTaken: false,
  };
}

/**
 * Reads the JSON body of an operation that takes one, once the caller is authenticated, holding at
 * most the operation's `maxBodyBytes` (OpenAPI `x-svc-max-body-bytes`). A body that cannot be read
 * is kept on `call.bodyError` and answered after the scope checks and the rate limit (DESIGN.md
 * check order); one abandoned half-read closes the connection with the answer.
 */
export function readRestBody(req: Request, res: Response, call: OperationCall): Promise<void> | undefined {
  const hasBody =
    req.headers['transfer-encoding'] !== undefined || req.headers['content-length'] !== undefined;
  // Nothing to read (a GET): no promise, so the hot reads wait for nothing here.
  if (!call.operation.hasJsonBody || !hasBody || !req.is(jsonTypes)) return undefined;
  return readBody(req, res, call);
}

async function readBody(req: Request, res: Response, call: OperationCall): Promise<void> {
  try {
    acceptJsonBody(call, parseJson(await readJsonText(req, call.operation.maxBodyBytes)));
  } catch (error) {
    if (!(error instanceof BodyReadError)) throw error;
    if (error.abandoned) res.setHeader('Connection', 'close');
    call.bodyError = bodyError(error, call.operation);
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
 * What handlers still read from the Express request: the call's principal, body, idempotency
 * scope and (coerced, completed with defaults) query, and the operation it addresses.
 */
export function exposeCall(req: Request, call: OperationCall): void {
  req.call = call;
  req.principal = call.principal;
  req.idempotency = call.idempotency;
  if (call.body !== undefined) req.body = call.body;
  if (call.rawQuery !== undefined || call.operation.hasInput) {
    Object.defineProperty(req, 'query', {
      value: call.query,
      writable: true,
      configurable: true,
      enumerable: true,
    });
  }
}
