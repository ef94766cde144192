import type { RequestHandler } from 'express';

import { identityScopes } from '../../../shared/oauth/registration.ts';
import type { OauthServer } from './oauthServer.ts';

/** RFC 8414 authorization server metadata. */
export function metadataEndpoint(s: Pick<OauthServer, 'issuer' | 'doc' | 'config'>): RequestHandler {
  const { issuer } = s;
  const body = {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    revocation_endpoint: `${issuer}/revoke`,
    // RFC 7591: MCP clients register themselves (public clients, PKCE).
    registration_endpoint: `${issuer}/register`,
    // draft-ietf-oauth-client-id-metadata-document: a client_id may be the https URL of its metadata.
    client_id_metadata_document_supported: true,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    // RFC 9207: redirects carry iss, so a client talking to several servers cannot be mixed up.
    authorization_response_iss_parameter_supported: true,
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
    scopes_supported: [...s.doc.scopes, ...identityScopes],
    service_documentation: `${s.config.publicBaseUrl}/api/pub/v1/openapi.json`,
  };
  return (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(body);
  };
}
