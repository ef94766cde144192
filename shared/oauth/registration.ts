/** Scopes every OAuth app may ask for besides the API catalogue's operation ids (spec "OAuth 2.1 apps"). */
export const identityScopes = ['openid', 'profile', 'email', 'offline_access'] as const;

const browserSchemes = ['javascript', 'data', 'file', 'vbscript', 'about', 'blob'];

/**
 * Redirect URIs an app may register (matched exactly at authorization): https anywhere, http only on
 * localhost for development, or a private custom scheme for native apps. No fragments, no wildcards.
 * @returns the reason the URI is refused, or null when it is acceptable.
 */
export function redirectUriProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not an absolute URI';
  }
  if (raw.includes('#')) return 'must not contain a fragment';
  if (raw.includes('*')) return 'must not contain wildcards';
  if (url.protocol === 'https:') return url.hostname === '' ? 'needs a host' : null;
  if (url.protocol === 'http:') {
    return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname)
      ? null
      : 'may use http only on localhost';
  }
  const scheme = url.protocol.slice(0, -1);
  if (browserSchemes.includes(scheme)) return `may not use the ${scheme} scheme`;
  // Native apps: a private-use scheme in reverse-domain form (RFC 8252 §7.1).
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+$/.test(scheme)
    ? null
    : 'needs a reverse-domain custom scheme (com.example.app:/callback)';
}
