import { apiBasePath } from '../../shared/config.ts';
import { protectedResources } from '../../shared/oauth/resources.ts';

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
