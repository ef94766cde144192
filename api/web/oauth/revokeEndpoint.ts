import type { RequestHandler } from 'express';

import { revokeClientToken } from '../../../shared/oauth/grants.ts';
import { OauthError } from '../../../shared/oauth/oauthError.ts';
import { authenticateClient } from './clientAuth.ts';
import type { OauthServer } from './oauthServer.ts';

/** POST {oauth_url}/revoke (RFC 7009): 200 with an empty body whether or not the token existed. */
export function revokeEndpoint(deps: Pick<OauthServer, 'pool'>, forgetTokens: () => void): RequestHandler {
  return async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const client = await authenticateClient(deps.pool, req);
    if (typeof body.token !== 'string' || body.token === '') {
      throw new OauthError('invalid_request', 'token is required.');
    }
    if (await revokeClientToken(deps.pool, client, body.token)) forgetTokens();
    res.status(200).end();
  };
}
