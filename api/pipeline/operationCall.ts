import type { Principal } from '../../shared/auth/principal.ts';
import type { IdempotencyScope } from '../../shared/idempotency/idempotencyStore.ts';
import type { Operation } from '../openapi/document.ts';

/**
 * One call of an API operation, as plain data: what the checks before a handler read and settle
 * (pipeline.ts). REST builds it from the Express request once (restCall.ts); an MCP tool call from
 * the tool's arguments (api/mcp/callTool.ts). Either way the same checks and the same operation
 * function run on it.
 */
export type OperationCall = {
  operation: Operation;
  requestId: string;
  startedAt: bigint;
  /** Set by authentication (REST) or taken from the /mcp request the tool call belongs to. */
  principal?: Principal;
  ip: string | undefined;
  method: string;
  /** The path below the API base, as sent (`/tasks/t_1`): the idempotency hash and storable-text check read it. */
  path: string;
  /** The path from the root, API base included, as the request log records it. */
  fullPath: string;
  /** Path parameters by name, decoded. */
  params: Record<string, string>;
  /** The query, parsed; the contract check coerces its values and fills defaults in place. */
  query: Record<string, unknown>;
  /** The undecoded query string (without `?`), or undefined when the URL has none. */
  rawQuery: string | undefined;
  /** Request headers by lower-cased name. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The parsed JSON body, once read and found within the operation's size and depth. */
  body: unknown;
  /** A body that could not be read; reported after the scope checks and the rate limit. */
  bodyError?: unknown;
  /** Paths in the JSON body of text PostgreSQL cannot store; refused after the contract checks. */
  unstorableBody?: string[];
  /** The Idempotency-Key this call runs under (see IdempotencyStore). */
  idempotency?: IdempotencyScope;
  /** The project the call is billed against, once resolved (the request log records it, failures too). */
  projectId?: string;
  /** What the call cost, for the request log. */
  costMinor?: number;
  /** The workspace's rate-limit token for this call was taken already (a lone MCP tool call's /mcp request). */
  tokenTaken: boolean;
  /** Headers every answer to the call carries, whatever it is (the x-ratelimit-*-requests trio). */
  answerHeaders?: Record<string, string>;
};

/** What an operation answers: a JSON body with its status, Location and other headers. */
export type Answer = {
  status: number;
  body: unknown;
  location?: string | null;
  headers?: Record<string, string>;
};

/** An operation's own work over a checked call (its handler, callable without HTTP). */
export type OperationFunction = (call: OperationCall) => Promise<Answer>;

/** A header's single value (the first of a repeated one, as Express's req.get gives). */
export function headerOf(call: Pick<OperationCall, 'headers'>, name: string): string | undefined {
  const value = call.headers[name];
  return Array.isArray(value) ? value[0] : value;
}
