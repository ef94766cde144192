import { type ErrorCode, errorStatus } from './codes.ts';

export type Issue = { path: string; message: string };

/** The one error type the API answers with; everything else is an internal_error. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly issues: Issue[] | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { issues?: Issue[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = errorStatus[code];
    this.issues = options.issues;
    this.headers = options.headers;
  }
}

export const errors = {
  notFound: (what: string, id?: string) =>
    new AppError('not_found', id === undefined ? `No such ${what}.` : `No such ${what}: '${id}'.`),
  invalidBody: (issues: Issue[]) =>
    new AppError('invalid_request_body', 'The request body does not match the schema.', { issues }),
  internal: (message = 'The server failed to complete the request; retry with backoff.', cause?: unknown) =>
    new AppError('internal_error', message, { cause }),
};

/** Normalises any thrown value into an Error (a rejected promise may carry anything). */
export function coerceError(value: unknown): Error {
  if (value instanceof Error) return value;
  return new Error(typeof value === 'string' ? value : JSON.stringify(value));
}

/**
 * What a lookup found.
 * @throws AppError not_found naming the `what` and `id` looked for, when it found nothing.
 */
export function found<T>(row: T | null | undefined, what: string, id: string): T {
  if (row === null || row === undefined) throw errors.notFound(what, id);
  return row;
}
