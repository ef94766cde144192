import type { Request } from 'express';

import { asRequest, idOf, rpcCodes, rpcError, type RpcResponse } from './jsonRpc.ts';
import { metaVersion, statelessVersion, supportedVersions } from './protocol.ts';

const listed = supportedVersions.join(', ');

/**
 * The transport rules on versions and routing headers, checked before any message runs: an
 * unsupported version, a `_meta` version the MCP-Protocol-Version header contradicts, or Mcp-Method /
 * Mcp-Name headers that are not the body's answer 400 with a JSON-RPC error naming the problem.
 * @returns the error to send, or the revision the body speaks (stateless = 2026-07-28).
 */
export function checkHeaders(
  req: Request,
  messages: unknown[],
): { error: RpcResponse } | { stateless: boolean } {
  const header = req.get('mcp-protocol-version');
  const firstId = messages.length === 1 ? idOf(messages[0]) : null;
  const refuse = (message: string) =>
    ({
      error: rpcError(firstId, rpcCodes.invalidRequest, message, { supported: supportedVersions }),
    }) as const;
  if (header !== undefined && !supportedVersions.includes(header)) {
    return refuse(`Unsupported MCP-Protocol-Version ${header}; supported: ${listed}.`);
  }
  let stateless = header === statelessVersion;
  for (const message of messages) {
    const request = asRequest(message);
    if (!request) continue;
    const version = metaVersion(request.params);
    if (version === undefined) {
      if (stateless && request.method !== 'initialize' && request.id !== undefined) {
        return refuse(
          `A ${statelessVersion} request names its version in params._meta["io.modelcontextprotocol/protocolVersion"].`,
        );
      }
      continue;
    }
    if (typeof version !== 'string' || !supportedVersions.includes(version)) {
      return refuse(`Unsupported protocol version ${String(version)} in _meta; supported: ${listed}.`);
    }
    if (version !== header) {
      return refuse(
        `The MCP-Protocol-Version header (${header ?? 'absent'}) must equal the _meta protocol version (${version}).`,
      );
    }
    stateless ||= version === statelessVersion;
  }
  if (messages.length === 1) {
    const request = asRequest(messages[0]);
    const method = req.get('mcp-method');
    const name = req.get('mcp-name');
    if (request && stateless && method === undefined) {
      return refuse(`A ${statelessVersion} request carries an Mcp-Method header.`);
    }
    if (request && method !== undefined && method !== request.method) {
      return refuse(`The Mcp-Method header (${method}) must equal the body's method (${request.method}).`);
    }
    const toolName = request?.method === 'tools/call' ? request.params?.name : undefined;
    if (request && stateless && toolName !== undefined && name === undefined) {
      return refuse(`A ${statelessVersion} tools/call carries an Mcp-Name header naming the tool.`);
    }
    if (name !== undefined && toolName !== undefined && name !== toolName) {
      return refuse(`The Mcp-Name header (${name}) must equal the tool called (${String(toolName)}).`);
    }
  }
  return { stateless };
}
