import { apiBasePath } from '../../shared/config/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import type { ApiDocument, Operation } from '../openapi/document.ts';
import type { OperationCall } from '../pipeline/operationCall.ts';
import type { ToolCallContext } from './callTool.ts';
import {
  mcpCodes,
  rpcCodes,
  rpcError,
  RpcFailure,
  type RpcId,
  type RpcRequest,
  type RpcResponse,
} from './jsonRpc.ts';

const operations = new WeakMap<ApiDocument, Operation>();

function mcpOperation(doc: ApiDocument): Operation {
  let op = operations.get(doc);
  if (!op) {
    op = doc.operations.find((o) => o.id === 'platform.mcp')!;
    operations.set(doc, op);
  }
  return op;
}

/** An API refusal as the JSON-RPC error the spec names for it, with the API's code and issues in data. */
function refusal(id: RpcId, status: number, body: unknown): RpcResponse {
  const error = (body as { error: { code: string; message: string; issues?: unknown } }).error;
  const data = { code: error.code, ...(error.issues ? { issues: error.issues } : {}) };
  if (error.code === 'invalid_workflow_values' || error.code === 'invalid_request_body') {
    return rpcError(id, rpcCodes.invalidParams, error.message, data);
  }
  return rpcError(id, status >= 500 ? mcpCodes.internalError : mcpCodes.apiRefused, error.message, data);
}

/**
 * Runs one of the server's own methods (resources/*, prompts/*, completion/complete) as an operation
 * call of POST /mcp through the pipeline (pipeline.run), as a tool call runs: a lone call shares the
 * /mcp request's rate-limit token, each call of a batch takes its own; it gets its own request-log
 * entry (request id `<request>.<n>`, the message as its body, the JSON-RPC answer as its response),
 * so a /mcp request is logged once per call. AppErrors (scope, not_found, …) become JSON-RPC errors.
 */
export async function callMethod(
  context: ToolCallContext & { doc: ApiDocument },
  request: RpcRequest & { id: RpcId },
  seq: number,
  method: () => Promise<Record<string, unknown>>,
): Promise<RpcResponse> {
  const call: OperationCall = {
    operation: mcpOperation(context.doc),
    requestId: `${context.requestId.slice(0, 120)}.${seq}`,
    startedAt: process.hrtime.bigint(),
    principal: context.principal,
    ip: context.ip,
    method: 'POST',
    path: '/mcp',
    fullPath: `${apiBasePath}/mcp`,
    params: {},
    query: {},
    rawQuery: undefined,
    headers: {},
    body: request,
    tokenTaken: !context.batch,
  };
  const answer = await context.pipeline.run(call, async () => {
    try {
      return { status: 200, body: { jsonrpc: '2.0', id: request.id, result: await method() } };
    } catch (error) {
      if (!(error instanceof RpcFailure)) throw error;
      return { status: 200, body: rpcError(request.id, error.code, error.message, error.data) };
    }
  });
  context.logged += 1;
  if (answer.status >= 400) return refusal(request.id, answer.status, answer.body);
  return answer.body as RpcResponse;
}

/** not_found from a read, as -32002 naming the URI (the spec's "resource not found"). */
export function notFoundAsRpc(uri: string) {
  return (error: unknown): never => {
    if (error instanceof AppError && error.code === 'not_found') {
      throw new RpcFailure(mcpCodes.resourceNotFound, `Resource not found: ${uri}`, { uri });
    }
    throw error;
  };
}
