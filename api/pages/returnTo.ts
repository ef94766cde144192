/**
 * Where sign-in may send the browser afterwards: only back to an authorization request or the
 * account page on this server. Anything else (another host, `//evil`, a javascript: URL) becomes /account.
 */
export function safeReturnTo(value: unknown): string {
  if (typeof value !== 'string') return '/account';
  if (value === '/account') return value;
  return value.startsWith('/oauth/authorize?') && !/[\\\r\n]/.test(value) ? value : '/account';
}
