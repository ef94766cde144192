import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError } from 'slonik';

import { AppError } from './appError.ts';

/** A part of the platform whose outage a request can run into, as the status page names it. */
export type Part = 'database' | 'storage';

// SQLSTATEs a server sends while it shuts down, restarts or refuses connections (PostgreSQL's
// appendix A: class 08 connection exceptions, 57P01-57P03 operator intervention, 53300 too many
// connections). A refused or dropped socket reaches us as slonik's ConnectionError or
// BackendTerminated errors, so bare socket codes (which object storage's client raises too) are not read.
const unavailableSqlStates = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
]);

// How long a client should wait: a PostgreSQL fast restart takes about a second, a pooler's
// reconnect a little more; a shorter wait would only meet the same outage again.
export const unavailableRetryAfterSeconds = 2;

// What node-postgres throws, without a code, for a connection that broke or was never made.
const brokenClient =
  /^(Client has encountered a connection error and is not queryable|Client was closed and is not queryable|Connection terminated|timeout exceeded when trying to connect)/;

const codeOf = (error: object) => (error as { code?: unknown }).code;

function* causes(error: unknown): Generator<object> {
  const seen = new Set<unknown>();
  let current = error;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    seen.add(current);
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

/** Whether `error` (or one of its causes) says the database could not be reached, not that a statement was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of causes(error)) {
    if (
      e instanceof ConnectionError ||
      e instanceof BackendTerminatedError ||
      e instanceof BackendTerminatedUnexpectedlyError
    ) {
      return true;
    }
    const code = codeOf(e);
    if (typeof code === 'string' && unavailableSqlStates.has(code)) return true;
    if (e instanceof Error && brokenClient.test(e.message)) return true;
  }
  return false;
}

/** The answer to a request that met an outage of `part`: 503 with Retry-After, never a 500. */
export function serviceUnavailable(part: Part, cause?: unknown): AppError {
  const what = part === 'database' ? 'The database' : 'File storage';
  return new AppError(
    'service_unavailable',
    `${what} is unavailable for a moment; retry after ${unavailableRetryAfterSeconds} seconds.`,
    { headers: { 'Retry-After': String(unavailableRetryAfterSeconds) }, cause },
  );
}
