import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

import type { Request, Response } from 'express';

import { findServerSecret } from '../../shared/db/queries/serverSecrets.ts';
import type { Db } from '../../shared/db/sql.ts';
import { readCookie, setCookie } from './cookies.ts';

const cookieName = 'svc_csrf';

/**
 * Form tokens: a random httpOnly cookie, and in each form the HMAC of that cookie and the session id
 * under a key every api process derives from the database's server secret. Another site can make the
 * browser send the cookie (were it not SameSite) but can neither read it nor compute the token.
 */
export class CsrfKeys {
  private key: Promise<Buffer> | undefined;
  private readonly db: Db;

  constructor(db: Db) {
    this.db = db;
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

  /** The token for this browser's forms, setting the cookie it is bound to when the browser has none. */
  async tokenFor(req: Request, res: Response, sessionId: string | null, secure: boolean): Promise<string> {
    let cookie = readCookie(req, cookieName);
    if (!cookie || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) {
      cookie = randomBytes(32).toString('base64url');
      setCookie(res, cookieName, cookie, { secure });
      // Later reads in this request (a second form) see the same cookie.
      req.headers.cookie = `${req.headers.cookie ? `${req.headers.cookie}; ` : ''}${cookieName}=${cookie}`;
    }
    return this.sign(await this.get(), cookie, sessionId);
  }

  /** Is the form's token the one this browser's cookie and session would be given? */
  async verify(req: Request, sessionId: string | null): Promise<boolean> {
    const cookie = readCookie(req, cookieName);
    const sent = (req.body as Record<string, unknown> | undefined)?._csrf;
    if (!cookie || typeof sent !== 'string') return false;
    const expected = Buffer.from(this.sign(await this.get(), cookie, sessionId));
    const actual = Buffer.from(sent);
    return actual.length === expected.length && timingSafeEqual(actual, expected);
  }

  private sign(key: Buffer, cookie: string, sessionId: string | null): string {
    return createHmac('sha256', key)
      .update(`${cookie}|${sessionId ?? ''}`)
      .digest('base64url');
  }
}
