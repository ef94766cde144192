/*
 * The OAuth 2.1 authorization server (issue 11), written on the existing Express app rather than with
 * `oidc-provider`. That library was evaluated first: it mints its own opaque ids (nanoid, no prefix hook,
 * so no svc_ac_/svc_at_/svc_rt_ formats), keeps tokens in a key-value adapter keyed by the token value
 * itself (no hashed storage, no join to members and keys for the api's credential cache), runs on Koa with
 * its own cookie sessions and interaction model, and treats any reuse of a rotated refresh token as
 * theft at once — it has no grace window handing concurrent refreshes the same new pair. Bending it to
 * all of that would leave little of it; the RFC 6749/7636/7009/8414 subset the spec asks for is small.
 */
import express, { type ErrorRequestHandler, type Express, type RequestHandler, Router } from 'express';

import { OauthError } from '../../../shared/oauth/oauthError.ts';
import { decideAuthorize, showAuthorize } from './authorize.ts';
import { InvalidClient } from './clientAuth.ts';
import { metadataEndpoint } from './metadata.ts';
import type { OauthServer } from './oauthServer.ts';
import { registerEndpoint } from './registerEndpoint.ts';
import { revokeEndpoint } from './revokeEndpoint.ts';
import { tokenEndpoint } from './tokenEndpoint.ts';

const formBody = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 50 });
const jsonBody = express.json({ limit: '16kb' });

// Token responses and errors are never cached (RFC 6749 §5.1); browsers' apps may call these endpoints
// cross-origin: they take no cookie, so any origin may.
const tokenHeaders: RequestHandler = (req, res, next) => {
  res.set({ 'Cache-Control': 'no-store', Pragma: 'no-cache', 'Access-Control-Allow-Origin': '*' });
  if (req.method === 'OPTIONS') {
    res.set({
      'Access-Control-Allow-Methods': 'POST',
      'Access-Control-Allow-Headers': 'Authorization, Content-Type',
      'Access-Control-Max-Age': '600',
    });
    return res.status(204).end();
  }
  next();
};

/** RFC 6749 §5.2 bodies; anything unexpected is server_error, logged. */
function tokenErrors(s: OauthServer): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    let oauth: OauthError;
    if (error instanceof OauthError) oauth = error;
    else if (
      typeof (error as { type?: unknown }).type === 'string' &&
      (error as { status?: number }).status! < 500
    ) {
      // body-parser's refusals: malformed JSON, too large, wrong charset.
      oauth = new OauthError('invalid_request', 'The request body could not be read.');
    } else {
      s.logger.error({ err: error, requestId: req.requestId }, 'oauth endpoint failed');
      oauth = new OauthError('server_error', 'The server failed; retry later.');
    }
    if (oauth.endedTokens) s.forgetTokens();
    if (oauth instanceof InvalidClient && oauth.usedBasic) res.set('WWW-Authenticate', 'Basic realm="oauth"');
    res.status(oauth.status).json({ error: oauth.error, error_description: oauth.message });
  };
}

/**
 * {oauth_url} (token, revoke, register, metadata) on the app, and the consent page (authorize) on the
 * browser pages' router, on the api tier at PUBLIC_BASE_URL (DESIGN.md).
 */
export function installOauthServer(app: Express, pages: Router, s: OauthServer): void {
  const metadata = metadataEndpoint(s);

  const tokens = Router();
  tokens.use(['/token', '/revoke', '/register'], tokenHeaders, formBody, jsonBody);
  tokens.post('/token', tokenEndpoint(s, s.grants, s.forgetTokens));
  tokens.post('/revoke', revokeEndpoint(s, s.forgetTokens));
  tokens.post('/register', registerEndpoint(s));
  tokens.use(['/token', '/revoke', '/register'], tokenErrors(s));
  app.use('/oauth', tokens);

  // RFC 8414 §3: {oauth_url}/.well-known/… as the spec says, and the path-inserted form for an issuer
  // with a path, which generic clients (oauth4webapi, MCP clients) derive from the issuer.
  app.get('/oauth/.well-known/oauth-authorization-server', metadata);
  app.get('/.well-known/oauth-authorization-server/oauth', metadata);

  // Bodies are read on these routes only: the public API reads its own, after authentication.
  pages.get('/oauth/authorize', showAuthorize(s));
  pages.post('/oauth/authorize', formBody, decideAuthorize(s));
}
