import type { ServerResponse } from 'node:http';

import type { Request } from 'express';
import { inject } from 'light-my-request';

import { apiBasePath } from '../../shared/config.ts';
import { markInternal } from './internalCall.ts';
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

const methodsOf = new WeakMap<object, [string, unknown][]>();

function keepOwnMethods(target: object): void {
  const proto = Object.getPrototypeOf(target) as Record<string, unknown>;
  let methods = methodsOf.get(proto);
  if (!methods) {
    methods = Object.getOwnPropertyNames(proto)
      .filter((name) => name !== 'constructor' && typeof proto[name] === 'function')
      .map((name) => [name, proto[name]]);
    methodsOf.set(proto, methods);
  }
  for (const [name, method] of methods) (target as Record<string, unknown>)[name] = method;
}

// light-my-request's end() emits 'finish' after Node's own: the request log and the idempotency
// store listen for it, and would record the call twice.
function finishOnce(res: ServerResponse): void {
  const emit = res.emit.bind(res);
  let finished = false;
  res.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event === 'finish') {
      if (finished) return false;
      finished = true;
    }
    return emit(event, ...args);
  }) as typeof res.emit;
}

/** Splits tool arguments into the REST call: path parameters, query parameters, the JSON body. */
function restCall(
  tool: Tool,
  args: Record<string, unknown>,
): { url: string; body?: Record<string, unknown> } | string {
  const rest = { ...args };
  let path = tool.op.path;
  for (const name of tool.pathParams) {
    const value = rest[name];
    if (typeof value !== 'string' || value === '') return `Argument ${name} is required: a non-empty string.`;
    path = path.replace(`{${name}}`, encodeURIComponent(value));
    delete rest[name];
  }
  const query = new URLSearchParams();
  const properties = tool.definition.inputSchema as { properties: Record<string, unknown> };
  const bodyless = !tool.op.hasJsonBody;
  for (const [name, value] of Object.entries(rest)) {
    if (!bodyless || !(name in properties.properties)) continue;
    query.set(name, typeof value === 'string' ? value : JSON.stringify(value));
    delete rest[name];
  }
  if (bodyless && Object.keys(rest).length > 0) {
    return `Unknown argument(s): ${Object.keys(rest).join(', ')}.`;
  }
  const qs = query.toString();
  return { url: `${apiBasePath}${path}${qs ? `?${qs}` : ''}`, body: bodyless ? undefined : rest };
}

/**
 * Runs the tool's REST operation through this app (see internalCall.ts), so validation, scope,
 * metering and the request-log entry are the REST call's own; its answer becomes the tool result.
 */
export async function callTool(
  req: Request,
  tool: Tool,
  args: Record<string, unknown>,
  seq: number,
): Promise<ToolResult> {
  const call = restCall(tool, args);
  if (typeof call === 'string') return failure(call);
  const headers: Record<string, string> = {
    authorization: req.get('authorization') ?? '',
    'x-request-id': `${req.requestId.slice(0, 120)}.${seq}`,
  };
  if (call.body !== undefined) headers['content-type'] = 'application/json';
  const app = req.app;
  let answered: ServerResponse | undefined;
  const response = await inject(
    (inner, res) => {
      answered = res;
      markInternal(inner, req);
      // Express swaps the prototypes of what it handles for its own; the injected request and
      // response keep their stream methods as own properties, or the answer is never captured.
      keepOwnMethods(inner);
      keepOwnMethods(res);
      finishOnce(res);
      app(inner as never, res as never);
    },
    {
      method: tool.op.method as 'GET' | 'POST',
      url: call.url,
      headers,
      // The caller's address as the api sees it (trust proxy applied), for the request log.
      remoteAddress: req.ip ?? req.socket.remoteAddress ?? '127.0.0.1',
      ...(call.body === undefined ? {} : { payload: JSON.stringify(call.body) }),
    },
  );
  // The object the handler answered with (kept by installRequestLog), not its JSON parsed again.
  const kept = (answered as unknown as { locals?: { responseBody?: unknown } } | undefined)?.locals
    ?.responseBody;
  const body = (kept ?? response.json()) as Record<string, unknown>;
  if (response.statusCode >= 400) return fromError(body.error as ApiError);
  const structured = tool.pick ? { [tool.pick]: body[tool.pick] } : body;
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    isError: false,
  };
}
