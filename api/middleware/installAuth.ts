import type { Express, Request } from 'express';

import { apiBasePath } from '../../shared/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import { protectedResources } from '../../shared/oauth/resources.ts';
import { apiResourceMetadataUrl, resourceMetadataUrl } from '../../shared/oauth/resources.ts';
import { scopeAllows } from '../../shared/principal.ts';
import { authenticate, type CredentialResolver } from '../auth/authenticate.ts';
import type { FailedAuthLimiter } from '../auth/failedAuthLimiter.ts';
import type { KeyCache } from '../auth/keyCache.ts';

/**
 * Authenticates from the headers alone, before any body is read: an unauthenticated call costs a
 * header parse and (for an unknown key) one cached lookup. Client addresses that keep failing are
 * refused before any lookup (FailedAuthLimiter). Ends with the key checks of DESIGN.md's order up to
 * "covers no active project".
 */
export function installAuthentication(
  app: Express,
  keys: KeyCache,
  resolvers: CredentialResolver[],
  failures: FailedAuthLimiter,
  publicBaseUrl: string,
): void {
  app.use(apiBasePath, async (req, _res, next) => {
    if (!req.operation?.authenticated) return next();
    const header = req.get('authorization');
    failures.check(req.ip, header, keys);
    try {
      req.principal = await authenticate(keys, header, req.ip, resolvers);
    } catch (error) {
      if (error instanceof AppError && error.status === 401) {
        failures.record(req.ip);
        // MCP authorization (RFC 9728 §5.1): the challenge tells a client where to start OAuth.
        if (req.operation.id === 'platform.mcp') {
          throw new AppError(error.code, error.message, {
            headers: {
              'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl(publicBaseUrl)}"`,
            },
          });
        }
      }
      throw error;
    }
    const audience = req.principal.audience;
    if (audience) {
      // RFC 8707: a token minted for the MCP server works there only, one for the REST API there only.
      const { api, mcp } = protectedResources(publicBaseUrl);
      const isMcp = req.operation.id === 'platform.mcp';
      if (audience !== (isMcp ? mcp : api)) {
        throw new AppError('invalid_api_key', `This access token was issued for ${audience}, not this resource.`, {
          headers: {
            'WWW-Authenticate': isMcp
              ? `Bearer error="invalid_token", resource_metadata="${resourceMetadataUrl(publicBaseUrl)}"`
              : 'Bearer error="invalid_token"',
          },
        });
      }
    }
    if (req.principal.projects.length === 0) {
      throw new AppError('api_key_project_scope', 'This key covers no active project.');
    }
    next();
  });
}

/**
 * The project rule's scope half (a projectId in the body must be one of the key's projects), then
 * the operation scope. Which project is billed is decided later, after body validation.
 * @throws AppError api_key_project_scope, api_key_operation_scope (with an insufficient_scope challenge).
 */
export function checkScopes(req: Request, publicBaseUrl: string): void {
  const { operation, principal } = req;
  if (!operation?.authenticated || !principal) return;
  const projectId = (req.body as { projectId?: unknown } | undefined)?.projectId;
  if (typeof projectId === 'string' && !principal.projects.some((p) => p.id === projectId)) {
    throw new AppError('api_key_project_scope', `Project '${projectId}' is outside this key's scope.`);
  }
  if (operation.scope !== undefined && !scopeAllows(principal.scope, operation.scope)) {
    // RFC 6750 §3.1: an OAuth client can ask the person for the missing scope (step-up).
    const challenge = [
      'Bearer error="insufficient_scope"',
      `scope="${operation.scope}"`,
      `resource_metadata="${apiResourceMetadataUrl(publicBaseUrl)}"`,
    ].join(', ');
    throw new AppError('api_key_operation_scope', `This key's scope does not cover ${operation.scope}.`, {
      headers: { 'WWW-Authenticate': challenge },
    });
  }
}

/** checkScopes after the body is read, in DESIGN.md's order. */
export function installScopes(app: Express, publicBaseUrl: string): void {
  app.use(apiBasePath, (req, _res, next) => {
    checkScopes(req, publicBaseUrl);
    next();
  });
}
