import type { Request } from 'express';

import { insertSecretReveal, takeSecretReveal } from '../../../shared/db/queries/secretReveals.ts';
import { isoAt } from '../../../shared/primitives/clock.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { openJson, sealJson } from '../../../shared/primitives/sealedBox.ts';
import type { BrowserContext } from '../browserContext.ts';
import { formCookie } from '../csrf.ts';
import type { ConsoleContext } from './consoleContextType.ts';

/** What the page after a creating form shows, once: the thing's name, words, and its values. */
export type Reveal = {
  title: string;
  heading: string;
  note: string;
  /** Shown in order; the first `secret` one gets the copy button. */
  fields: { label: string; value: string; secret: boolean }[];
  back: { href: string; label: string };
};

/** Long enough to follow a redirect on a slow phone; short enough that a stale tab shows nothing. */
const revealLifetimeMs = 5 * 60_000;

// The key comes from the browser's form cookie and the reveal's id: the row alone opens nothing.
const boxKey = (cookie: string, id: string) => ({ secret: cookie, salt: id, info: 'svc console reveal v1' });
const seal = (cookie: string, id: string, reveal: Reveal) => sealJson(boxKey(cookie, id), reveal);
const open = (cookie: string, id: string, sealed: Buffer) => openJson<Reveal>(boxKey(cookie, id), sealed);

/**
 * Keeps a secret for the one page that shows it and returns that page's address, for the form's
 * 303. The form was posted with this browser's form cookie (its CSRF check needs it).
 */
export async function stashReveal(
  web: BrowserContext,
  c: ConsoleContext,
  req: Request,
  reveal: Reveal,
): Promise<string> {
  const id = newId('rvl');
  await insertSecretReveal(web.pool, {
    id,
    sessionId: c.person.sessionId,
    memberId: c.member.id,
    sealed: seal(formCookie(req) ?? '', id, reveal),
    expiresAt: isoAt(web.clock, revealLifetimeMs),
  });
  return `${c.base}/reveal/${id}`;
}

/** The reveal, once; null when it was shown already, expired, or is another browser's. */
export async function takeReveal(
  web: BrowserContext,
  c: ConsoleContext,
  req: Request,
  id: string,
): Promise<Reveal | null> {
  const sealed = await takeSecretReveal(web.pool, {
    id,
    sessionId: c.person.sessionId,
    memberId: c.member.id,
  });
  return sealed && open(formCookie(req) ?? '', id, sealed);
}
