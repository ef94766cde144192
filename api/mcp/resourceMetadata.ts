import type { Express, RequestHandler } from 'express';

import { apiBasePath } from '../../shared/config/config.ts';
import { oauthIssuer } from '../../shared/oauth/issuer.ts';
import { mcpResource } from '../../shared/oauth/resources.ts';
import type { AppDeps } from '../deps.ts';
import { toolsOf } from './tools.ts';

/**
 * RFC 9728 protected resource metadata. MCP clients read the path-suffixed document named in the
 * 401 challenge (resource = the /mcp URL); generic clients the root one (resource = the whole API).
 * Both point at the one authorization server.
 */
export function installResourceMetadata(app: Express, deps: AppDeps): void {
  // MCP clients ask for exactly what scopes_supported lists: the tools' scopes an unverified,
  // self-registered app may hold, so they connect without an operator; plus offline_access, so they
  // keep access. The sensitive tools' scopes need a verified app that asks for them by name.
  const toolScopes = [...toolsOf(deps.doc).values()].flatMap((t) =>
    t.op.scope && !t.op.sensitive ? [t.op.scope] : [],
  );
  const document = (resource: string, name: string, scopes: string[]) => ({
    resource,
    resource_name: name,
    authorization_servers: [oauthIssuer(deps.config.publicBaseUrl)],
    bearer_methods_supported: ['header'],
    scopes_supported: [...new Set(scopes), 'offline_access'],
    resource_documentation: `${deps.config.publicBaseUrl}${apiBasePath}/openapi.json`,
  });
  const send =
    (body: object): RequestHandler =>
    (_req, res) => {
      res.set({ 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' }).json(body);
    };
  const base = new URL(deps.config.publicBaseUrl);
  const prefix = base.pathname.replace(/\/$/, '');
  app.get(
    '/.well-known/oauth-protected-resource',
    send(document(`${deps.config.publicBaseUrl}${apiBasePath}`, 'svc platform API', deps.doc.scopes)),
  );
  app.get(
    `/.well-known/oauth-protected-resource${prefix}${apiBasePath}/mcp`,
    send(document(mcpResource(deps.config.publicBaseUrl), 'svc platform MCP server', toolScopes)),
  );
}
