import type { Request, Response } from 'express';

/** One cookie's value from the request (no cookie-parser: two cookies do not warrant a dependency). */
export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/**
 * Session-grade cookies: httpOnly (no script reads them), SameSite=Lax (a cross-site POST carries
 * none of them), Secure whenever the public URL is https.
 */
export function setCookie(
  res: Response,
  name: string,
  value: string,
  options: { secure: boolean; maxAgeSeconds?: number },
): void {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${options.maxAgeSeconds}`);
  res.append('Set-Cookie', parts.join('; '));
}
