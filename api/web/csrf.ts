import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import type { Request, Response } from 'express';

import { findServerSecret } from '../../shared/db/queries/serverSecrets.ts';
import type { Db } from '../../shared/db/sql.ts';
import type { Clock } from '../../shared/primitives/clock.ts';
import { readCookie, setCookie } from './cookies.ts';

const cookieName = 'svc_csrf';
const signInCookieName = 'svc_signin';
const cookieValue = /^[A-Za-z0-9_-]{43}$/;
/** This browser's form cookie (random, httpOnly): key material only this browser holds. */
export const formCookie = (req: Request): string | undefined => readCookie(req, cookieName);

/** How long a sign-in form may be sent after it was shown. */
export const signInFormLifetimeSeconds = 60 * 60;

/**
 * Form tokens: a random httpOnly cookie, and in each form the HMAC of that cookie and the session id
 * under a key every api process derives from the database's server secret. Another site can make the
 * browser send the cookie (were it not SameSite) but can neither read it nor compute the token.
 *
 * The sign-in form, shown before there is a session, has a cookie of its own (the pre-sign-in
 * session, ended at sign-in) and a token that carries its expiry under the same HMAC: checking it
 * needs neither the database nor a password hash, so forged or stale forms cost a flood nothing.
 */
export class CsrfKeys {
  private key: Promise<Buffer> | undefined;
  private readonly db: Db;
  private readonly clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.db = db;
    this.clock = clock;
  }

  private get(): Promise<Buffer> {
    this.key ??= findServerSecret(this.db, 'cursor').then((secret) =>
      // A purpose-specific key: the stored secret also signs task cursors, never interchangeably.
      createHmac('sha256', secret).update('svc page csrf v1').digest(),
    );
    this.key.catch(() => {
      this.key = undefined;
    });
    return this.key;
  }

  /** The token for a signed-in session's forms, setting the cookie it is bound to when the browser has none. */
  async tokenFor(req: Request, res: Response, sessionId: string, secure: boolean): Promise<string> {
    const cookie = ensureCookie(req, res, cookieName, { secure });
    return this.sign(await this.get(), `${cookie}|${sessionId}`);
  }

  /** Is the form's token the one this browser's cookie and session would be given? */
  async verify(req: Request, sessionId: string): Promise<boolean> {
    const cookie = readCookie(req, cookieName);
    const sent = sentToken(req);
    if (!cookie || sent === null) return false;
    return same(sent, this.sign(await this.get(), `${cookie}|${sessionId}`));
  }

  /**
   * The sign-in form's token: bound to the pre-sign-in cookie (set, or renewed to outlive the token)
   * and valid for an hour. Not single-use: the attempt slots already bound how often anyone may try,
   * and a replay needs the httpOnly cookie as well.
   */
  async signInToken(req: Request, res: Response, secure: boolean): Promise<string> {
    const cookie = ensureCookie(req, res, signInCookieName, {
      secure,
      maxAgeSeconds: signInFormLifetimeSeconds,
    });
    const expires = Math.floor(this.clock() / 1000) + signInFormLifetimeSeconds;
    return `${expires}.${this.sign(await this.get(), `sign-in|${cookie}|${expires}`)}`;
  }

  /** Was this sign-in form shown to this browser's pre-sign-in session, less than its lifetime ago? */
  async verifySignIn(req: Request): Promise<boolean> {
    const cookie = readCookie(req, signInCookieName);
    const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(sentToken(req) ?? '');
    if (!cookie || !cookieValue.test(cookie) || !match) return false;
    const expires = Number(match[1]);
    if (expires * 1000 <= this.clock()) return false;
    return same(match[2]!, this.sign(await this.get(), `sign-in|${cookie}|${expires}`));
  }

  /** Ends the pre-sign-in session (at sign-in): its forms are no longer this browser's. */
  endSignIn(res: Response, secure: boolean): void {
    setCookie(res, signInCookieName, '', { secure, maxAgeSeconds: 0 });
  }

  private sign(key: Buffer, input: string): string {
    // Inputs never collide across purposes: a session token's starts with a 43-character cookie.
    return createHmac('sha256', key).update(input).digest('base64url');
  }
}

/** The browser's random cookie `name`, set when absent or malformed (and renewed when it has a lifetime). */
function ensureCookie(
  req: Request,
  res: Response,
  name: string,
  options: { secure: boolean; maxAgeSeconds?: number },
): string {
  let cookie = readCookie(req, name);
  const fresh = !cookie || !cookieValue.test(cookie);
  if (fresh) cookie = randomBytes(32).toString('base64url');
  if (fresh || options.maxAgeSeconds !== undefined) setCookie(res, name, cookie!, options);
  if (fresh) {
    // Later reads in this request (a second form) see the same cookie.
    req.headers.cookie = `${req.headers.cookie ? `${req.headers.cookie}; ` : ''}${name}=${cookie}`;
  }
  return cookie!;
}

function sentToken(req: Request): string | null {
  const sent = (req.body as Record<string, unknown> | undefined)?._csrf;
  return typeof sent === 'string' ? sent : null;
}

function same(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
