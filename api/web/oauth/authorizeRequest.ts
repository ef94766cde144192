import { findOauthAppByClientId, type OauthAppRow } from '../../../shared/db/queries/oauthApps.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { isMetadataClientId } from '../../../shared/oauth/clientMetadataDocument.ts';
import {
  type DynamicClient,
  isLoopbackRedirect,
  withoutPort,
} from '../../../shared/oauth/dynamicRegistration.ts';
import type { ConsentedApp } from '../../../shared/oauth/issueCode.ts';
import { isCodeChallenge } from '../../../shared/oauth/pkce.ts';
import { identityScopes } from '../../../shared/oauth/registration.ts';
import { resourceProblem } from '../../../shared/oauth/resources.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import type { MetadataClients } from './metadataClients.ts';

/** The app as the request sees it: its row, or for a metadata-document client its current document. */
export type AuthorizeApp = Pick<
  OauthAppRow,
  'client_id' | 'name' | 'redirect_uris' | 'scopes' | 'verified' | 'registration'
> & {
  /** The stored row's id; null for a metadata-document app no one has approved yet (it has no row). */
  id: string | null;
  /** What an approval records consent to. */
  consentTo: ConsentedApp;
};

const fromRow = (row: OauthAppRow): AuthorizeApp => ({ ...row, consentTo: { kind: 'row', id: row.id } });

/**
 * A metadata-document app: what it may do comes from the document (fetched or cached for this very
 * request); only its id and an operator's verification come from a row an earlier approval made.
 */
function fromDocument(clientId: string, client: DynamicClient, row: OauthAppRow | null): AuthorizeApp {
  return {
    id: row?.id ?? null,
    client_id: clientId,
    name: client.name,
    redirect_uris: client.redirectUris,
    scopes: client.scopes,
    verified: row?.verified ?? false,
    registration: 'metadata',
    consentTo: { kind: 'document', clientId, client },
  };
}

/** A checked authorization request: every field comes from the registered app or was validated. */
export type AuthorizeRequest = {
  app: AuthorizeApp;
  redirectUri: string;
  scopes: string[];
  state: string | undefined;
  codeChallenge: string;
  /** RFC 8707: the resource the tokens will be for; undefined = the whole API and /mcp. */
  resource: string | undefined;
  /** prompt=consent: ask even when a remembered consent covers the request. */
  forceConsent: boolean;
};

/**
 * Exact match, but a self-registered native app's loopback redirect may come back on any port
 * (RFC 8252 §7.3: the port is picked when the app starts listening).
 */
function redirectAllowed(app: AuthorizeApp, uri: string): boolean {
  if (app.redirect_uris.includes(uri)) return true;
  if (app.registration === 'operator' || !isLoopbackRedirect(uri)) return false;
  const portless = withoutPort(uri);
  return app.redirect_uris.some((r) => isLoopbackRedirect(r) && withoutPort(r) === portless);
}

/** Errors the app's redirect_uri may hear about (RFC 6749 §4.1.2.1). */
export type RedirectError = {
  error:
    'invalid_request' | 'unsupported_response_type' | 'invalid_scope' | 'access_denied' | 'invalid_target';
  description: string;
};

export type Parsed =
  /** The client or redirect_uri cannot be trusted: show a page, never redirect (open-redirect guard). */
  | { kind: 'page'; message: string }
  /** This address fetched its budget of metadata documents: a page too, as the redirect_uri is unchecked. */
  | { kind: 'throttled'; retryAfterSeconds: number }
  | { kind: 'redirect'; redirectUri: string; state: string | undefined; error: RedirectError }
  | { kind: 'ok'; request: AuthorizeRequest };

const one = (params: Record<string, unknown>, name: string): string | undefined => {
  const value = params[name];
  return typeof value === 'string' ? value : undefined;
};

/**
 * Validates GET and POST /oauth/authorize alike (the POST repeats the request in hidden fields, and
 * is checked again: nothing a form carries is trusted).
 */
export async function parseAuthorizeRequest(
  db: Db,
  doc: ApiDocument,
  params: Record<string, unknown>,
  publicBaseUrl: string,
  metadataClients: MetadataClients,
  clientAddress: string,
): Promise<Parsed> {
  for (const name of [
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'resource',
  ]) {
    if (Array.isArray(params[name])) return { kind: 'page', message: `${name} was given more than once.` };
  }
  const clientId = one(params, 'client_id');
  let app: AuthorizeApp | null = null;
  if (clientId && isMetadataClientId(clientId)) {
    // Client ID Metadata Document: the URL is the client; its document says what it may do.
    const resolved = await metadataClients.resolve(clientId, clientAddress);
    if ('retryAfterSeconds' in resolved) return { kind: 'throttled', ...resolved };
    if ('error' in resolved) return { kind: 'page', message: resolved.error };
    app = fromDocument(clientId, resolved.client, await findOauthAppByClientId(db, clientId));
  } else if (clientId && /^svc_oc_[0-9A-Za-z]{1,64}$/.test(clientId)) {
    const row = await findOauthAppByClientId(db, clientId);
    app = row && fromRow(row);
  }
  if (!app) return { kind: 'page', message: 'This app is not registered (unknown client_id).' };
  const redirectUri = one(params, 'redirect_uri');
  // Exact string match against the registered list: no prefix, no normalisation (spec, RFC 9700 §4.1.3).
  if (!redirectUri || !redirectAllowed(app, redirectUri)) {
    return { kind: 'page', message: 'The redirect_uri is not one this app registered.' };
  }
  const state = one(params, 'state');
  const fail = (error: RedirectError['error'], description: string): Parsed => ({
    kind: 'redirect',
    redirectUri,
    state,
    error: { error, description },
  });
  if (one(params, 'response_type') !== 'code') {
    return fail('unsupported_response_type', 'Only response_type=code is supported.');
  }
  const challenge = one(params, 'code_challenge');
  if (!challenge) return fail('invalid_request', 'code_challenge is required (PKCE).');
  if (one(params, 'code_challenge_method') !== 'S256') {
    return fail('invalid_request', 'code_challenge_method must be S256.');
  }
  if (!isCodeChallenge(challenge)) {
    return fail('invalid_request', 'code_challenge is not a base64url SHA-256.');
  }
  const scopes = [...new Set((one(params, 'scope') ?? '').split(' ').filter(Boolean))];
  if (scopes.length === 0) return fail('invalid_scope', 'scope is required.');
  const known = new Set<string>([...doc.scopes, ...identityScopes]);
  const unknown = scopes.filter((s) => !known.has(s) || !app.scopes.includes(s));
  if (unknown.length > 0) {
    return fail('invalid_scope', `Scopes not available to this app: ${unknown.join(' ')}.`);
  }
  if (!app.verified) {
    const sensitive = scopes.filter((s) => doc.operations.some((o) => o.scope === s && o.sensitive));
    if (sensitive.length > 0) {
      return fail('invalid_scope', `An unverified app may not ask for: ${sensitive.join(' ')}.`);
    }
  }
  const resource = one(params, 'resource');
  const resourceIssue = resource === undefined ? null : resourceProblem(publicBaseUrl, resource);
  if (resourceIssue) return fail('invalid_target', resourceIssue);
  return {
    kind: 'ok',
    request: {
      app,
      redirectUri,
      scopes,
      state,
      codeChallenge: challenge,
      resource,
      forceConsent: one(params, 'prompt') === 'consent',
    },
  };
}

/** The app's redirect_uri with the answer added to its query (its own query parameters kept). */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) url.searchParams.append(name, value);
  }
  return url.toString();
}
