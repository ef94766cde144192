import { apiBasePath } from '../config/config.ts';

/**
 * The resources (RFC 8707) a token may be minted for: the REST API and the MCP server. The rule:
 * a token names at most one; a token for the API works on the REST API only, one for the MCP
 * server on POST /mcp only, and one minted without a resource on both.
 */
export function protectedResources(publicBaseUrl: string): { api: string; mcp: string } {
  const api = `${publicBaseUrl}${apiBasePath}`;
  return { api, mcp: `${api}/mcp` };
}

/** Why `resource` cannot be a token's audience here, or null when it can. */
export function resourceProblem(publicBaseUrl: string, resource: string): string | null {
  const { api, mcp } = protectedResources(publicBaseUrl);
  return resource === api || resource === mcp ? null : `resource must be ${api} or ${mcp}.`;
}

/** The MCP server's resource identifier (RFC 8707): the canonical URL of POST /mcp. */
export function mcpResource(publicBaseUrl: string): string {
  return protectedResources(publicBaseUrl).mcp;
}

/** The metadata of the whole API as a protected resource (RFC 9728 §3, no path). */
export function apiResourceMetadataUrl(publicBaseUrl: string): string {
  const base = new URL(publicBaseUrl);
  return `${base.origin}/.well-known/oauth-protected-resource${base.pathname.replace(/\/$/, '')}`;
}

/** RFC 9728 §3.1: the metadata URL of a resource with a path inserts the well-known segment before it. */
export function resourceMetadataUrl(publicBaseUrl: string): string {
  const base = new URL(publicBaseUrl);
  return `${base.origin}/.well-known/oauth-protected-resource${base.pathname.replace(/\/$/, '')}${apiBasePath}/mcp`;
}
