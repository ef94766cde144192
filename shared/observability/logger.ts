import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino } from 'pino';

import { scrubSecrets } from './scrubSecrets.ts';

export type Logger = pino.Logger;

/**
 * What an error becomes in a log line: a fixed set of fields that identify the failure. Anything
 * else an error object carries (a pg client with its connection parameters, a slonik pool, the
 * request options of an HTTP client, query values) never reaches the log.
 */
export type LoggedError = {
  type: string;
  message: string;
  stack?: string;
  /** Node's `code` (ECONNREFUSED), PostgreSQL's SQLSTATE (57P01), or an application code. */
  code?: string | number;
  errno?: number;
  syscall?: string;
  /** PostgreSQL's report: which object the failure names (identifiers, never row values). */
  severity?: string;
  schema?: string;
  table?: string;
  column?: string;
  constraint?: string;
  status?: number;
  /** The members of an AggregateError (both addresses a connection attempt tried), bounded. */
  errors?: (LoggedError | string)[];
  cause?: LoggedError | string;
};

const maxCauseDepth = 4;
const maxAggregated = 4;

const stringFields = ['syscall', 'severity', 'schema', 'table', 'column', 'constraint'] as const;

/**
 * The one way an error (or any thrown value) is written to a log: only the fields of LoggedError,
 * texts scrubbed of secrets, causes followed `maxCauseDepth` deep. Never throws.
 */
export function serializeError(
  value: unknown,
  known: readonly string[] = [],
  depth = 0,
): LoggedError | string {
  if (typeof value !== 'object' || value === null) return scrubSecrets(String(value), known);
  const source = value as Record<string, unknown>;
  const read = (key: string): unknown => {
    try {
      return source[key];
    } catch {
      // A getter that throws (a proxy, a half-torn-down client) must not lose the log line.
      return undefined;
    }
  };
  const name = read('name');
  const constructorName = (value as { constructor?: { name?: unknown } }).constructor?.name;
  const out: LoggedError = {
    type: typeof constructorName === 'string' && constructorName !== 'Object' ? constructorName : 'Error',
    message: scrubSecrets(typeof read('message') === 'string' ? (read('message') as string) : '', known),
  };
  if (typeof name === 'string' && name !== out.type && name !== 'Error') out.type = name;
  const stack = read('stack');
  if (typeof stack === 'string') out.stack = scrubSecrets(stack, known);
  const code = read('code');
  if (typeof code === 'string' || typeof code === 'number') {
    out.code = typeof code === 'string' ? scrubSecrets(code, known) : code;
  }
  const errno = read('errno');
  if (typeof errno === 'number') out.errno = errno;
  for (const field of stringFields) {
    const v = read(field);
    if (typeof v === 'string') out[field] = scrubSecrets(v, known);
  }
  const status = read('status') ?? read('statusCode');
  if (typeof status === 'number') out.status = status;
  const errors = read('errors');
  if (Array.isArray(errors) && depth < maxCauseDepth) {
    out.errors = errors.slice(0, maxAggregated).map((e) => serializeError(e, known, depth + 1));
  }
  const cause = read('cause');
  if (cause !== undefined && cause !== null && depth < maxCauseDepth) {
    out.cause = serializeError(cause, known, depth + 1);
  }
  return out;
}

/**
 * The active span's ids, on every line written inside a span (a traced request, a job, a provider
 * call). With tracing off there is never an active span: one lookup, nothing added. A new object each
 * time: pino merges the line's fields into it.
 */
function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (span === undefined) return {};
  const context = span.spanContext();
  return isSpanContextValid(context) ? { trace_id: context.traceId, span_id: context.spanId } : {};
}

function isErrorLike(value: unknown): value is Error {
  return value instanceof Error || (typeof value === 'object' && value !== null && 'stack' in value);
}

export type LoggerOptions = {
  /** Configured secret values (see `configSecrets`) replaced wherever they appear in a log line. */
  secrets?: readonly string[];
  /** Where lines go (tests capture them); standard output by default. */
  destination?: pino.DestinationStream;
};

/**
 * Every process's logger. Errors under any top-level key go through `serializeError`; messages and
 * top-level strings are scrubbed of secrets, so a failure's text cannot carry a credential out.
 */
export function createLogger(level: string, name: string, options: LoggerOptions = {}): Logger {
  const known = options.secrets ?? [];
  const scrub = (text: string) => scrubSecrets(text, known);
  const errorSerializer = (value: unknown) => serializeError(value, known);
  return pino(
    {
      level,
      name,
      base: { pid: process.pid },
      mixin: traceFields,
      serializers: { err: errorSerializer, error: errorSerializer },
      formatters: {
        log(object) {
          const out: Record<string, unknown> = {};
          for (const [key, value] of Object.entries(object)) {
            if (key === 'err' || key === 'error') out[key] = value;
            else if (typeof value === 'string') out[key] = scrub(value);
            else if (isErrorLike(value)) out[key] = serializeError(value, known);
            else out[key] = value;
          }
          return out;
        },
      },
      hooks: {
        logMethod(args, method) {
          const [first, ...rest] = args as unknown[];
          const texts = rest.map((arg) => (typeof arg === 'string' ? scrub(arg) : arg));
          if (typeof first === 'string') {
            return method.apply(this, [scrub(first), ...texts] as Parameters<typeof method>);
          }
          // pino would use the error's own message as the line's message, unscrubbed.
          let object = first;
          if (isErrorLike(first)) object = { err: first };
          const err = (object as { err?: unknown } | null)?.err;
          if (texts.length === 0 && isErrorLike(err) && typeof err.message === 'string') {
            texts.push(scrub(err.message));
          }
          return method.apply(this, [object, ...texts] as Parameters<typeof method>);
        },
      },
    },
    // Synchronous: pino's default asynchronous stdout writes each line from the thread pool, and the
    // flush it runs on exit writes what is buffered at once, ahead of a line still queued there — so
    // a process's last lines (a drain's "database system is shut down") came out after later ones.
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
