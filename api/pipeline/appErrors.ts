import { AppError, type Issue } from '../../shared/errors/appError.ts';
import type { ErrorCode } from '../../shared/errors/codes.ts';
import { isDatabaseUnavailable, serviceUnavailable } from '../../shared/errors/unavailable.ts';
import type { Logger } from '../../shared/observability/logger.ts';
import { isStorageUnavailable } from '../../shared/storage/storageFailure.ts';
import type { Operation } from '../openapi/document.ts';

/** What the mapping reads of the failed call (a REST request or an operation call). */
export type ErrorContext = { operation?: Operation; requestId: string; path: string };

type ValidatorError = { status: number; errors: { path: string; message: string; errorCode?: string }[] };

function isValidatorError(error: unknown): error is ValidatorError {
  return typeof error === 'object' && error !== null && Array.isArray((error as ValidatorError).errors);
}

/** `/body/aspectRatio` → `aspectRatio`; `/headers/idempotency-key` stays namespaced for the lookup. */
function toIssue(item: ValidatorError['errors'][number]): Issue & { location: string } {
  const segments = item.path
    .replace(/^\.?\//, '')
    .split(/[/.]/)
    .filter(Boolean);
  const [location = 'body', ...rest] = segments;
  const field = rest.join('.');
  return { path: field || location, message: item.message, location };
}

/**
 * Maps validator output to the spec's codes: a field whose schema names an x-svc-error-code (prompt
 * length, aspect ratio, Idempotency-Key) answers with that code when it is the only kind of problem;
 * a wrong type or anything else is invalid_request_body with one issue per field.
 */
function fromValidator(error: ValidatorError, operation: Operation | undefined): AppError {
  if (error.status === 415) {
    return new AppError('invalid_request_body', 'Unsupported Content-Type for this endpoint.', {
      issues: [{ path: 'content-type', message: error.errors[0]?.message ?? 'unsupported content type' }],
    });
  }
  const issues = error.errors.map(toIssue);
  const specific = new Set<ErrorCode>();
  let generic = false;
  error.errors.forEach((item, i) => {
    const issue = issues[i]!;
    const top = issue.path.split('.')[0] ?? issue.path;
    const field = issue.location === 'headers' ? top.toLowerCase() : top;
    const code = operation?.fieldErrorCodes.get(`${issue.location}.${field}`);
    // A missing or mistyped field is a schema problem (DESIGN.md: non-string prompt = invalid_request_body).
    if (code && !/^(type|required)\./.test(item.errorCode ?? '')) specific.add(code);
    else generic = true;
  });
  const clean = issues.map(({ path, message }) => ({ path, message }));
  if (!generic && specific.size === 1) {
    const [code] = specific;
    return new AppError(code!, clean.map((i) => `${i.path} ${i.message}`).join('; '), { issues: clean });
  }
  return new AppError('invalid_request_body', 'The request does not match the schema.', { issues: clean });
}

/**
 * Any failure as the AppError it answers as: an AppError itself, a validator report mapped to the
 * spec's codes, anything else a logged internal_error. REST requests and MCP tool calls alike.
 */
export function toAppError(error: unknown, req: ErrorContext, logger: Logger): AppError {
  let appError: AppError;
  if (error instanceof AppError) appError = error;
  // A 5xx from the validator is a response that breaks the contract (tests validate responses):
  // the server's fault, logged with what did not match.
  else if (isValidatorError(error) && error.status < 500) appError = fromValidator(error, req.operation);
  else if (isDatabaseUnavailable(error)) appError = serviceUnavailable('database', error);
  else if (isStorageUnavailable(error)) appError = serviceUnavailable('storage', error);
  else {
    logger.error({ err: error, requestId: req.requestId, path: req.path }, 'unhandled error');
    appError = new AppError(
      'internal_error',
      'The server failed to complete the request; retry with backoff.',
    );
  }
  if (appError.status >= 500 && appError.code !== 'internal_error') {
    logger.warn({ err: error, requestId: req.requestId }, 'server-side error answered');
  }
  return appError;
}

/** The spec's error envelope, naming the request. */
export function errorBody(appError: AppError, requestId: string) {
  return {
    error: {
      code: appError.code,
      message: appError.message,
      requestId,
      ...(appError.issues ? { issues: appError.issues } : {}),
    },
  };
}
