/**
 * Where sign-in may send the browser afterwards: only back to an authorization request, the account
 * page or a console page on this server. Anything else (another host, `//evil`, a javascript: URL)
 * becomes /account.
 */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string' || /[\\\r\n]/.test(value)) return '/account';
  if (value === '/account' || value === '/console') return value;
  if (/^\/console\/[A-Za-z0-9_]+(\/[A-Za-z0-9_/-]*)?(\?[^#]*)?$/.test(value)) return value;
  return value.startsWith('/oauth/authorize?') ? value : '/account';
}
