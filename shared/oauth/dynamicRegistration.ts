import { OauthError } from './oauthError.ts';
import { identityScopes, redirectUriProblem } from './registration.ts';

/** What RFC 7591 §2 metadata a self-registering client may send, checked. */
export type DynamicClient = {
  name: string;
  redirectUris: string[];
  scopes: string[];
};

const loopbackHosts = ['localhost', '127.0.0.1', '[::1]'];

/** RFC 8252 §7.3: a native app's loopback redirect may use any port; the rest must match exactly. */
export function isLoopbackRedirect(uri: string): boolean {
  try {
    const url = new URL(uri);
    return url.protocol === 'http:' && loopbackHosts.includes(url.hostname);
  } catch {
    return false;
  }
}

/** The URI without its port, for the loopback comparison. */
export function withoutPort(uri: string): string {
  const url = new URL(uri);
  url.port = '';
  return url.toString();
}

const text = (value: unknown, max: number): string | undefined =>
  typeof value === 'string' && value.trim() !== '' && value.length <= max ? value.trim() : undefined;

/**
 * Reads a registration request. Only public clients (token_endpoint_auth_method none, PKCE) and the
 * code flow: a self-registered app has no way to keep a secret we would trust anyway.
 * @param available every scope an app may hold; the default when the client names none, less `sensitive`.
 * @throws OauthError invalid_redirect_uri / invalid_client_metadata naming the problem.
 */
export function parseDynamicClient(
  body: Record<string, unknown>,
  available: readonly string[],
  sensitive: readonly string[],
): DynamicClient {
  const uris = body.redirect_uris;
  if (
    !Array.isArray(uris) ||
    uris.length === 0 ||
    uris.length > 10 ||
    !uris.every((u) => typeof u === 'string')
  ) {
    throw new OauthError('invalid_redirect_uri', 'redirect_uris must list 1 to 10 URIs.');
  }
  for (const uri of uris as string[]) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OauthError('invalid_redirect_uri', `redirect_uri ${uri} ${problem}.`);
  }
  const method = body.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    throw new OauthError(
      'invalid_client_metadata',
      'Only public clients register: token_endpoint_auth_method must be none.',
    );
  }
  const grants = (body.grant_types ?? ['authorization_code']) as unknown[];
  if (!Array.isArray(grants) || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
    throw new OauthError(
      'invalid_client_metadata',
      'grant_types may hold authorization_code and refresh_token.',
    );
  }
  const responses = (body.response_types ?? ['code']) as unknown[];
  if (!Array.isArray(responses) || responses.some((r) => r !== 'code')) {
    throw new OauthError('invalid_client_metadata', 'response_types may hold code only.');
  }
  const known = new Set<string>([...available, ...identityScopes]);
  const requested = typeof body.scope === 'string' ? body.scope.split(' ').filter(Boolean) : undefined;
  const unknown = (requested ?? []).filter((s) => !known.has(s));
  if (unknown.length > 0) {
    throw new OauthError('invalid_client_metadata', `Unknown scopes: ${unknown.join(' ')}.`);
  }
  const scopes = requested ?? [...available.filter((s) => !sensitive.includes(s)), ...identityScopes];
  if (scopes.length === 0) throw new OauthError('invalid_client_metadata', 'scope names no scope.');
  const host = new URL(uris[0] as string).host;
  return {
    name: text(body.client_name, 200) ?? `App at ${host || 'a native app'}`,
    redirectUris: [...new Set(uris as string[])],
    scopes: [...new Set(scopes)],
  };
}
