import { apiBasePath } from '../config.ts';

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
