import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

/** JSON-RPC 2.0 as POST /mcp reads it: ids are strings or numbers, a message without one is a notification. */
export type RpcId = string | number;

export type RpcRequest = {
  jsonrpc: '2.0';
  id?: RpcId;
  method: string;
  params?: Record<string, unknown>;
};

export type RpcResponse =
  | { jsonrpc: '2.0'; id: RpcId | null; result: Record<string, unknown> }
  | { jsonrpc: '2.0'; id: RpcId | null; error: { code: number; message: string; data?: unknown } };

// The four codes the spec lists, named as the SDK names them.
export const rpcCodes = {
  parseError: ErrorCode.ParseError,
  invalidRequest: ErrorCode.InvalidRequest,
  methodNotFound: ErrorCode.MethodNotFound,
  invalidParams: ErrorCode.InvalidParams,
} as const;

export function rpcError(id: RpcId | null, code: number, message: string, data?: unknown): RpcResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

export function rpcResult(id: RpcId, result: Record<string, unknown>): RpcResponse {
  return { jsonrpc: '2.0', id, result };
}

/** The message's id when it has a usable one, so an invalid request can still be answered by id. */
export function idOf(message: unknown): RpcId | null {
  const id = (message as { id?: unknown } | null)?.id;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** A JSON-RPC 2.0 request or notification; anything else is -32600 (a response sent to us included). */
export function asRequest(message: unknown): RpcRequest | undefined {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  if (m.jsonrpc !== '2.0' || typeof m.method !== 'string' || m.method === '') return undefined;
  if ('id' in m && idOf(m) === null) return undefined;
  if (
    m.params !== undefined &&
    (typeof m.params !== 'object' || m.params === null || Array.isArray(m.params))
  ) {
    return undefined;
  }
  return m as RpcRequest;
}

/** Codes the MCP spec names beyond JSON-RPC's own, and the one we use for an API refusal. */
export const mcpCodes = {
  /** resources/read of a URI that names nothing the caller may read (error.data.uri names it). */
  resourceNotFound: -32002,
  /** The API refused the call (scope, rate limit, …): error.data carries its code, as REST would answer. */
  apiRefused: -32000,
  internalError: -32603,
} as const;

/** A JSON-RPC error a method answers with, thrown from deep inside it. */
export class RpcFailure extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}
