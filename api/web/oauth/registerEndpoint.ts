import type { RequestHandler } from 'express';

import { insertOauthApp } from '../../../shared/db/queries/oauthApps.ts';
import { parseDynamicClient } from '../../../shared/oauth/dynamicRegistration.ts';
import { OauthError } from '../../../shared/oauth/oauthError.ts';
import { newId, randomBase62 } from '../../../shared/primitives/ids.ts';
import { AddressThrottle } from './addressThrottle.ts';
import type { OauthServer } from './oauthServer.ts';

/**
 * POST /oauth/register, RFC 7591 dynamic client registration for MCP clients that arrive without
 * an operator: a public app, unverified (so never granted sensitive scopes), in no project until a
 * person consents.
 */
export function registerEndpoint(deps: Pick<OauthServer, 'doc' | 'pool'>): RequestHandler {
  const sensitive = deps.doc.operations.flatMap((o) => (o.sensitive && o.scope ? [o.scope] : []));
  // Registration needs no credential: each address registers a bounded number of apps an hour.
  const throttle = new AddressThrottle();
  return async (req, res) => {
    const retryAfter = throttle.take(req.ip ?? '');
    if (retryAfter !== null) {
      res.set('Retry-After', String(retryAfter));
      throw new OauthError('invalid_request', 'Too many registrations from this address; retry later.');
    }
    const client = parseDynamicClient(
      (req.body ?? {}) as Record<string, unknown>,
      deps.doc.scopes,
      sensitive,
    );
    const clientId = `svc_oc_${randomBase62(24)}`;
    await insertOauthApp(deps.pool, {
      id: newId('app'),
      projectId: null,
      workspaceId: null,
      name: client.name,
      clientId,
      clientSecretHash: null,
      type: 'public',
      redirectUris: client.redirectUris,
      scopes: client.scopes,
      verified: false,
      registration: 'dynamic',
    });
    res.status(201).json({
      client_id: clientId,
      client_id_issued_at: Math.floor(Date.now() / 1000),
      client_name: client.name,
      redirect_uris: client.redirectUris,
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: client.scopes.join(' '),
    });
  };
}
