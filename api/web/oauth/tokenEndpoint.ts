import type { RequestHandler } from 'express';

import { exchangeCode, type GrantOptions, refreshTokens } from '../../../shared/oauth/grants.ts';
import { OauthError } from '../../../shared/oauth/oauthError.ts';
import { resourceProblem } from '../../../shared/oauth/resources.ts';
import { authenticateClient } from './clientAuth.ts';
import type { OauthServer } from './oauthServer.ts';

type TokenDeps = Pick<OauthServer, 'pool' | 'config'>;

function param(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (typeof value !== 'string' || value === '') {
    throw new OauthError('invalid_request', `${name} is required.`);
  }
  return value;
}

/** RFC 8707 `resource`: one absolute URI this server protects, or none. */
function resourceParam(deps: TokenDeps, body: Record<string, unknown>): string | undefined {
  const value = body.resource;
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new OauthError('invalid_target', 'Name one resource.');
  const problem = resourceProblem(deps.config.publicBaseUrl, value);
  if (problem) throw new OauthError('invalid_target', problem);
  return value;
}

/** POST {oauth_url}/token: the authorization_code and refresh_token grants, nothing else (OAuth 2.1). */
export function tokenEndpoint(
  deps: TokenDeps,
  options: GrantOptions,
  forgetTokens: () => void,
): RequestHandler {
  return async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const grantType = param(body, 'grant_type');
    if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
      throw new OauthError('unsupported_grant_type', 'Use authorization_code or refresh_token.');
    }
    const client = await authenticateClient(deps.pool, req);
    const resource = resourceParam(deps, body);
    const response =
      grantType === 'authorization_code'
        ? await exchangeCode(
            deps.pool,
            client,
            {
              code: param(body, 'code'),
              redirectUri: param(body, 'redirect_uri'),
              codeVerifier: param(body, 'code_verifier'),
              resource,
            },
            options,
          )
        : await refreshTokens(
            deps.pool,
            client,
            {
              refreshToken: param(body, 'refresh_token'),
              scope: typeof body.scope === 'string' ? body.scope : undefined,
              resource,
            },
            options,
          );
    // A rotation ended the old pair: this process must not serve it from its cache even once more.
    if (grantType === 'refresh_token') forgetTokens();
    res.json(response);
  };
}
