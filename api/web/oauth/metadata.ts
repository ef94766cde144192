import type { RequestHandler } from 'express';

import { identityScopes } from '../../../shared/oauth/registration.ts';
import type { AppDeps } from '../../deps.ts';

/** The issuer is {oauth_url} (DESIGN.md: PUBLIC_BASE_URL/oauth). */
export const issuerOf = (deps: AppDeps) => `${deps.config.publicBaseUrl}/oauth`;

/** RFC 8414 authorization server metadata. */
export function metadataEndpoint(deps: AppDeps): RequestHandler {
  const issuer = issuerOf(deps);
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
    scopes_supported: [...deps.doc.scopes, ...identityScopes],
    service_documentation: `${deps.config.publicBaseUrl}/api/pub/v1/openapi.json`,
  };
  return (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(body);
  };
}
