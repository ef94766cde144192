import { icons } from './icons.ts';

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

export const serverInfo = {
  name: 'svc-platform',
  title: 'svc platform',
  version: '1.0.0',
  icons: icons.server,
} as const;

/**
 * What the server offers. Change notifications exist only as 2026-07-28's subscriptions/listen
 * (resourceSubscriptions of task URIs): a stateless server has no session to remember a 2025
 * resources/subscribe by, so the handshake revisions are told `subscribe: false`.
 */
export function capabilitiesFor(stateless: boolean) {
  return {
    tools: { listChanged: false },
    resources: { subscribe: stateless, listChanged: false },
    prompts: { listChanged: false },
    completions: {},
  };
}

/**
 * 2026-07-28's caching hints on list results: what a credential sees depends on its workspace,
 * member and scope, so no shared cache may keep it (private); tools are fixed per credential, the
 * workspace's resources and workflows change as people work.
 */
export const cacheHints = {
  tools: { ttlMs: 300_000, cacheScope: 'private' },
  lists: { ttlMs: 30_000, cacheScope: 'private' },
} as const;

export const instructions =
  'Tools over the workspace of the credential: create and read tasks and their messages, list staff ' +
  'and projects, run workflows, search the brain. Each tool needs the scope of its REST operation; ' +
  'billed tools are metered exactly like the REST call. Resources: brain pages (svc://brain/pages/{slug}), ' +
  'files (svc://files/{fileId}) and task transcripts (svc://tasks/{taskId}); prompts: the workspace ' +
  "workflows. To wait for a task's reply, use subscriptions/listen (2026-07-28) on its URI.";

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
