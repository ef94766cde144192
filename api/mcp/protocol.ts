/**
 * The MCP revisions POST /mcp speaks. The 2025 revisions open with initialize; 2026-07-28 has no
 * handshake and names its version on every request, in `_meta` and in the MCP-Protocol-Version header.
 */
export const handshakeVersions = ['2025-11-25', '2025-06-18'] as const;
export const statelessVersion = '2026-07-28';
export const supportedVersions: readonly string[] = [statelessVersion, ...handshakeVersions];

export const metaKeys = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
} as const;

export const serverInfo = { name: 'svc-platform', title: 'svc platform', version: '1.0.0' } as const;

export const instructions =
  'Tools over the workspace of the credential: create and read tasks and their messages, list staff ' +
  'and projects, run workflows, search the brain. Each tool needs the scope of its REST operation; ' +
  'billed tools are metered exactly like the REST call.';

/** The version a 2025 client asked for at initialize, or the newest we speak (the revisions' negotiation rule). */
export function negotiate(requested: unknown): string {
  return (handshakeVersions as readonly unknown[]).includes(requested)
    ? (requested as string)
    : handshakeVersions[0];
}

/** The per-request version a 2026-07-28 message names in its params' `_meta`, if any. */
export function metaVersion(params: Record<string, unknown> | undefined): unknown {
  const meta = params?._meta;
  return typeof meta === 'object' && meta !== null
    ? (meta as Record<string, unknown>)[metaKeys.protocolVersion]
    : undefined;
}
