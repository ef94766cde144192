import { callTool, type ToolCallContext } from './callTool.ts';
import { asRequest, idOf, rpcCodes, rpcError, type RpcResponse, rpcResult } from './jsonRpc.ts';
import { instructions, metaKeys, negotiate, serverInfo, supportedVersions } from './protocol.ts';
import { mayCall, type Tool } from './tools.ts';

const capabilities = { tools: { listChanged: false } };

/** Answers one message of a POST /mcp body; undefined for a notification (nothing to answer). */
export async function dispatch(
  message: unknown,
  context: { tools: Map<string, Tool>; calls: ToolCallContext; seq: number; stateless: boolean },
): Promise<RpcResponse | undefined> {
  const { tools, calls, seq, stateless } = context;
  const request = asRequest(message);
  if (!request) {
    return rpcError(
      idOf(message),
      rpcCodes.invalidRequest,
      'Invalid Request: expected a JSON-RPC 2.0 request with a method.',
    );
  }
  if (request.id === undefined) return undefined;
  const { id } = request;
  const params = request.params ?? {};
  const done = (result: Record<string, unknown>) =>
    rpcResult(id, stateless ? { resultType: 'complete', ...result } : result);
  switch (request.method) {
    case 'initialize':
      return done({
        protocolVersion: negotiate(params.protocolVersion),
        capabilities,
        serverInfo,
        instructions,
      });
    case 'server/discover':
      return done({
        supportedVersions,
        capabilities,
        serverInfo,
        instructions,
        _meta: { [metaKeys.serverInfo]: serverInfo },
      });
    case 'ping':
      return done({});
    case 'tools/list':
      return done({
        tools: [...tools.values()].filter((t) => mayCall(calls.principal, t)).map((t) => t.definition),
      });
    case 'tools/call': {
      const tool = typeof params.name === 'string' ? tools.get(params.name) : undefined;
      if (!tool) {
        return rpcError(
          id,
          rpcCodes.invalidParams,
          `Unknown tool: ${String(params.name)}. Call tools/list for the tools.`,
        );
      }
      const args = params.arguments ?? {};
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        return rpcError(id, rpcCodes.invalidParams, 'params.arguments must be an object.');
      }
      return done(await callTool(calls, tool, args as Record<string, unknown>, seq));
    }
    default:
      return rpcError(id, rpcCodes.methodNotFound, `Method not found: ${request.method}.`);
  }
}
