import type { ApiDocument } from '../openapi/document.ts';
import { callTool, type ToolCallContext } from './callTool.ts';
import { complete } from './completion.ts';
import { asRequest, idOf, rpcCodes, rpcError, type RpcResponse, rpcResult } from './jsonRpc.ts';
import { callMethod } from './methodCall.ts';
import { allows, type McpDeps, resourceScopes } from './methodContext.ts';
import { getPrompt, listPrompts } from './prompts.ts';
import {
  cacheHints,
  capabilitiesFor,
  instructions,
  metaKeys,
  negotiate,
  serverInfo,
  statelessVersion,
  supportedVersions,
} from './protocol.ts';
import { listResources } from './resourceList.ts';
import { readResource } from './resourceRead.ts';
import { resourceTemplates, templateVariables } from './resourceUris.ts';
import { mayCall, type Tool } from './tools.ts';

export type DispatchContext = {
  tools: Map<string, Tool>;
  calls: ToolCallContext & { doc: ApiDocument };
  deps: McpDeps;
  seq: number;
  stateless: boolean;
};

// What a 2025 client is told of resources/subscribe (docs/mcp.md, "Change notifications").
const subscribeUnsupported =
  'resources/subscribe is not supported in the 2025 revisions here: this server keeps no session to ' +
  'send notifications on. Use subscriptions/listen with 2026-07-28, or read the resource again.';

/** Answers one message of a POST /mcp body; undefined for a notification (nothing to answer). */
export async function dispatch(message: unknown, context: DispatchContext): Promise<RpcResponse | undefined> {
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
  // Stateless lists carry 2026-07-28's caching hints.
  const cached = (hints: object) => (stateless ? hints : {});
  const method = (run: () => Promise<Record<string, unknown>>, hints: object = {}) =>
    callMethod(calls, { ...request, id }, seq, async () => ({
      ...(stateless ? { resultType: 'complete' } : {}),
      ...(await run()),
      ...cached(hints),
    }));
  const ctx = { deps: context.deps, principal: calls.principal, stateless };
  switch (request.method) {
    case 'initialize':
      return done({
        protocolVersion: negotiate(params.protocolVersion),
        capabilities: capabilitiesFor(false),
        serverInfo,
        instructions,
      });
    case 'server/discover':
      return done({
        supportedVersions,
        capabilities: capabilitiesFor(true),
        serverInfo,
        instructions,
        _meta: { [metaKeys.serverInfo]: serverInfo },
      });
    case 'ping':
      return done({});
    case 'tools/list':
      return done({
        tools: [...tools.values()].filter((t) => mayCall(calls.principal, t)).map((t) => t.definition),
        ...cached(cacheHints.tools),
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
    case 'resources/list':
      return method(() => listResources(ctx, params), cacheHints.lists);
    case 'resources/templates/list':
      return method(
        async () => ({
          resourceTemplates: resourceTemplates.filter((t) =>
            allows(calls.principal, resourceScopes[templateVariables[t.uriTemplate]!.kind]),
          ),
        }),
        cacheHints.tools,
      );
    case 'resources/read':
      return method(() => readResource(ctx, params));
    case 'prompts/list':
      return method(() => listPrompts(ctx), cacheHints.lists);
    case 'prompts/get':
      return method(() => getPrompt(ctx, params));
    case 'completion/complete':
      return method(() => complete(ctx, params));
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return rpcError(id, rpcCodes.methodNotFound, subscribeUnsupported, {
        use: 'subscriptions/listen',
        protocolVersion: statelessVersion,
      });
    case 'subscriptions/listen':
      return rpcError(
        id,
        stateless ? rpcCodes.invalidRequest : rpcCodes.methodNotFound,
        stateless
          ? 'subscriptions/listen must be the only message of its POST (its answer is an event stream).'
          : 'subscriptions/listen is a 2026-07-28 method: send it with that protocol version.',
      );
    default:
      return rpcError(id, rpcCodes.methodNotFound, `Method not found: ${request.method}.`);
  }
}
