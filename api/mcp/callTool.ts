import type { Request } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { setOwn } from '../../shared/ownProperty.ts';
import type { OperationRunner } from './runOperation.ts';
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
): { url: string; params: Record<string, string>; body?: Record<string, unknown> } | string {
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
  const qs = query.length > 0 ? `?${new URLSearchParams(query).toString()}` : '';
  return { url: `${apiBasePath}${path}${qs}`, params, body: bodyless ? undefined : rest };
}

/**
 * Runs the tool's REST operation (runOperation.ts), so validation, scope, metering and the
 * request-log entry are the REST call's own; its answer becomes the tool result. The entry's request
 * id names the /mcp request it served, with the message's place in a batch.
 */
export async function callTool(
  run: OperationRunner,
  req: Request,
  tool: Tool,
  args: Record<string, unknown>,
  seq: number,
): Promise<ToolResult> {
  const call = restCall(tool, args);
  if (typeof call === 'string') return failure(call);
  const { status, body } = await run(req, {
    operation: tool.op,
    url: call.url,
    params: call.params,
    body: call.body,
    requestId: `${req.requestId.slice(0, 120)}.${seq}`,
  });
  if (status >= 400) return fromError(body.error as ApiError);
  const structured = tool.pick ? { [tool.pick]: body[tool.pick] } : body;
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    isError: false,
  };
}
