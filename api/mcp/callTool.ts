import type { Principal } from '../../shared/auth/principal.ts';
import { apiBasePath } from '../../shared/config/config.ts';
import { setOwn } from '../../shared/primitives/ownProperty.ts';
import { acceptParsedBody } from '../pipeline/jsonBody.ts';
import type { OperationCall, OperationFunction } from '../pipeline/operationCall.ts';
import type { OperationPipeline } from '../pipeline/pipeline.ts';
import type { Tool } from './tools.ts';

export type ToolResult = {
  content: { type: 'text'; text: string }[];
  structuredContent?: Record<string, unknown>;
  isError: boolean;
};

type ApiError = { code: string; message: string; issues?: { path: string; message: string }[] };

// What a model can do about each failure, beyond the API's own message.
const hints: Record<string, string> = {
  api_key_operation_scope:
    'This credential cannot use this tool; ask its owner for a credential whose scope covers it.',
  project_id_required: 'Call list_projects and pass one of its ids as projectId.',
  api_key_project_scope: 'Use a projectId from list_projects.',
  insufficient_credits:
    'The workspace is out of credits; a workspace admin must add credits before retrying.',
  key_spend_limit_reached: 'The credential reached its monthly spend cap; retry next month or raise the cap.',
  not_found: 'Check the id (list tools return valid ones).',
  invalid_request_body: 'Fix the arguments named above and call again.',
  invalid_workflow_values: 'Fix the values named above and call again.',
  rate_limited: 'The workspace is over its request rate; wait a minute and call again.',
  invalid_cursor: 'Pass nextCursor exactly as returned, or omit cursor to start over.',
};

export function failure(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

function fromError(error: ApiError): ToolResult {
  const lines = [`${error.message} (${error.code})`];
  for (const issue of error.issues ?? []) {
    lines.push(`- ${issue.path.replace(/^\/?body\/?/, '') || 'arguments'}: ${issue.message}`);
  }
  if (hints[error.code]) lines.push(hints[error.code]!);
  return failure(lines.join('\n'));
}

/** Splits tool arguments into the REST call: path parameters, query parameters, the JSON body. */
function restCall(
  tool: Tool,
  args: Record<string, unknown>,
):
  | {
      path: string;
      params: Record<string, string>;
      query: [string, string][];
      body?: Record<string, unknown>;
    }
  | string {
  const params: Record<string, string> = {};
  let path = tool.op.path;
  for (const name of tool.pathParams) {
    const value = args[name];
    if (typeof value !== 'string' || value === '') return `Argument ${name} is required: a non-empty string.`;
    path = path.replace(`{${name}}`, encodeURIComponent(value));
    params[name] = value;
  }
  // Built without `delete`, which would turn the object into a slow dictionary on this hot path, and
  // with setOwn: an argument named __proto__ must stay an argument (the body REST's JSON.parse would
  // give for the same text), never become the body's prototype, unseen by the size check and the log.
  const rest: Record<string, unknown> = {};
  const query: [string, string][] = [];
  const properties = (tool.definition.inputSchema as { properties: Record<string, unknown> }).properties;
  const bodyless = !tool.op.hasJsonBody;
  for (const name in args) {
    if (!Object.hasOwn(args, name) || Object.hasOwn(params, name)) continue;
    const value = args[name];
    if (bodyless && Object.hasOwn(properties, name)) {
      query.push([name, typeof value === 'string' ? value : JSON.stringify(value)]);
    } else {
      setOwn(rest, name, value);
    }
  }
  if (bodyless && Object.keys(rest).length > 0) {
    return `Unknown argument(s): ${Object.keys(rest).join(', ')}.`;
  }
  return { path, params, query, body: bodyless ? undefined : rest };
}

/** What a tool call takes from the /mcp request it belongs to. */
export type ToolCallContext = {
  pipeline: Pick<OperationPipeline, 'run'>;
  functions: Record<string, OperationFunction>;
  principal: Principal;
  ip: string | undefined;
  requestId: string;
  /** The /mcp body is a batch: each tool call takes its own rate-limit token. */
  batch: boolean;
  /** Request-log entries the tool calls wrote so far (a /mcp request of tool calls only writes none of its own). */
  logged: number;
};

/**
 * Runs the tool's operation as an operation call through the pipeline (pipeline.run), so scope,
 * rate limit, the body's size and depth, the contract, metering and the request-log entry are the
 * REST call's own; its answer becomes the tool result. The entry's request id names the /mcp
 * request it served, with the message's place in a batch.
 */
export async function callTool(
  context: ToolCallContext,
  tool: Tool,
  args: Record<string, unknown>,
  seq: number,
): Promise<ToolResult> {
  const parts = restCall(tool, args);
  if (typeof parts === 'string') return failure(parts);
  const rawQuery = parts.query.length > 0 ? new URLSearchParams(parts.query).toString() : undefined;
  const call: OperationCall = {
    operation: tool.op,
    requestId: `${context.requestId.slice(0, 120)}.${seq}`,
    startedAt: process.hrtime.bigint(),
    principal: context.principal,
    ip: context.ip,
    method: tool.op.method,
    path: parts.path,
    fullPath: `${apiBasePath}${parts.path}`,
    params: parts.params,
    query: Object.fromEntries(parts.query),
    rawQuery,
    headers: parts.body === undefined ? {} : { 'content-type': 'application/json' },
    body: undefined,
    // A lone tool call is covered by the /mcp request's own token; in a batch each takes one, so a
    // batch cannot buy many calls for one request.
    tokenTaken: !context.batch,
  };
  // As the REST body parser takes a body: at most the operation's size, then its depth.
  if (parts.body !== undefined) acceptParsedBody(call, parts.body);
  const { status, body } = await context.pipeline.run(call, context.functions[tool.op.id]!);
  context.logged += 1;
  const answer = body as Record<string, unknown>;
  if (status >= 400) return fromError(answer.error as ApiError);
  const structured = tool.pick ? { [tool.pick]: answer[tool.pick] } : answer;
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    isError: false,
  };
}
