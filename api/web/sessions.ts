import { randomBytes } from 'node:crypto';

import type { Request, Response } from 'express';
import type { DatabasePool } from 'slonik';

import {
  deleteBrowserSession,
  findBrowserSession,
  insertBrowserSession,
} from '../../shared/db/queries/browserSessions.ts';
import { type Clock, isoAt } from '../../shared/primitives/clock.ts';
import { newId, sha256 } from '../../shared/primitives/ids.ts';
import { readCookie, setCookie } from './cookies.ts';

const cookieName = 'svc_session';
const sessionLifetimeMs = 7 * 24 * 60 * 60_000;

/** A signed-in person: one email, and the member rows (one per workspace) their password opened. */
export type Person = { sessionId: string; email: string; memberIds: string[] };

/** Server-side sessions in PostgreSQL (DESIGN.md): the cookie holds a random secret, the table its hash. */
export class BrowserSessions {
  private readonly pool: DatabasePool;
  private readonly clock: Clock;
  readonly secure: boolean;

  constructor(pool: DatabasePool, clock: Clock, secure: boolean) {
    this.pool = pool;
    this.clock = clock;
    this.secure = secure;
  }

  /** The person this browser is signed in as, or null (no cookie, unknown, expired, or no member left). */
  async current(req: Request): Promise<Person | null> {
    const secret = readCookie(req, cookieName);
    if (!secret || !/^[A-Za-z0-9_-]{43}$/.test(secret)) return null;
    const row = await findBrowserSession(this.pool, sha256(secret), isoAt(this.clock));
    if (!row || row.member_ids.length === 0) return null;
    return { sessionId: row.id, email: row.email, memberIds: row.member_ids };
  }

  /** Signs in with a fresh secret: a session id planted before sign-in never becomes a signed-in one. */
  async start(req: Request, res: Response, email: string, memberIds: string[]): Promise<string> {
    const previous = await this.current(req);
    if (previous) await deleteBrowserSession(this.pool, previous.sessionId);
    const secret = randomBytes(32).toString('base64url');
    const id = newId('bss');
    await insertBrowserSession(this.pool, {
      id,
      secretHash: sha256(secret),
      email,
      memberIds,
      ip: req.ip ?? null,
      userAgent: req.get('user-agent')?.slice(0, 500) ?? null,
      expiresAt: isoAt(this.clock, sessionLifetimeMs),
    });
    setCookie(res, cookieName, secret, { secure: this.secure, maxAgeSeconds: sessionLifetimeMs / 1000 });
    return id;
  }

  async end(person: Person, res: Response): Promise<void> {
    await deleteBrowserSession(this.pool, person.sessionId);
    setCookie(res, cookieName, '', { secure: this.secure, maxAgeSeconds: 0 });
  }
}
