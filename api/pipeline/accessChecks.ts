import { scopeAllows } from '../../shared/auth/principal.ts';
import type { Config } from '../../shared/config/config.ts';
import { AppError } from '../../shared/errors/appError.ts';
import {
  apiResourceMetadataUrl,
  protectedResources,
  resourceMetadataUrl,
} from '../../shared/oauth/resources.ts';
import { authenticate, type CredentialResolver } from '../auth/authenticate.ts';
import type { FailedAuthLimiter } from '../auth/failedAuthLimiter.ts';
import type { KeyCache } from '../auth/keyCache.ts';
import { headerOf, type OperationCall } from './operationCall.ts';

/**
 * The Streamable HTTP transport's DNS-rebinding defence, before the credential is read: a browser
 * page may call POST /mcp only from the server's own origin or one MCP_ALLOWED_ORIGINS lists.
 * Requests without Origin (servers, CLIs, desktop clients) are not browsers' and pass.
 */
export function mcpOrigin(config: Pick<Config, 'publicBaseUrl' | 'mcpAllowedOrigins'>) {
  const allowed = new Set([new URL(config.publicBaseUrl).origin, ...config.mcpAllowedOrigins]);
  return (call: OperationCall): void => {
    if (call.operation.id !== 'platform.mcp') return;
    const origin = headerOf(call, 'origin');
    if (origin === undefined || allowed.has(origin)) return;
    throw new AppError('origin_not_allowed', `Origin ${origin} may not call the MCP endpoint.`);
  };
}

export type AuthenticationDeps = {
  keys: KeyCache;
  resolvers: CredentialResolver[];
  failures: FailedAuthLimiter;
  publicBaseUrl: string;
};

/**
 * Authenticates from the headers alone, before any body is read: an unauthenticated call costs a
 * header parse and (for an unknown key) one cached lookup. Client addresses that keep failing are
 * refused before any lookup (FailedAuthLimiter). Ends with the key checks of DESIGN.md's order up to
 * "covers no active project".
 */
export function authentication({ keys, resolvers, failures, publicBaseUrl }: AuthenticationDeps) {
  return async (call: OperationCall): Promise<void> => {
    if (!call.operation.authenticated) return;
    const header = headerOf(call, 'authorization');
    const isMcp = call.operation.id === 'platform.mcp';
    failures.check(call.ip, header, keys);
    try {
      call.principal = await authenticate(keys, header, call.ip, resolvers);
    } catch (error) {
      if (error instanceof AppError && error.status === 401) {
        failures.record(call.ip);
        // MCP authorization (RFC 9728 §5.1): the challenge tells a client where to start OAuth.
        if (isMcp) {
          throw new AppError(error.code, error.message, {
            headers: {
              'WWW-Authenticate': `Bearer resource_metadata="${resourceMetadataUrl(publicBaseUrl)}"`,
            },
          });
        }
      }
      throw error;
    }
    const audience = call.principal.audience;
    if (audience) {
      // RFC 8707: a token minted for the MCP server works there only, one for the REST API there only.
      const { api, mcp } = protectedResources(publicBaseUrl);
      if (audience !== (isMcp ? mcp : api)) {
        throw new AppError(
          'invalid_api_key',
          `This access token was issued for ${audience}, not this resource.`,
          {
            headers: {
              'WWW-Authenticate': isMcp
                ? `Bearer error="invalid_token", resource_metadata="${resourceMetadataUrl(publicBaseUrl)}"`
                : 'Bearer error="invalid_token"',
            },
          },
        );
      }
    }
    if (call.principal.projects.length === 0) {
      throw new AppError('api_key_project_scope', 'This key covers no active project.');
    }
  };
}

/**
 * The project rule's scope half (a projectId in the body must be one of the key's projects), then
 * the operation scope. Which project is billed is decided later, after body validation.
 * @throws AppError api_key_project_scope, api_key_operation_scope (with an insufficient_scope challenge).
 */
export function scopes(publicBaseUrl: string) {
  return (call: OperationCall): void => {
    const { operation, principal } = call;
    if (!operation.authenticated || !principal) return;
    const projectId = (call.body as { projectId?: unknown } | undefined)?.projectId;
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
  };
}
