import type { RequestHandler } from 'express';

import { findConsoleMembers } from '../../../shared/db/queries/members.ts';
import type { BrowserContext } from '../browserContext.ts';
import { sendErrorPage } from '../html.ts';
import { sendConsoleError } from './layout.ts';

const missing = 'There is no such page in the console. Check the address, or use the navigation.';

/**
 * Any console URL no route answered: an HTML 404 inside the console's frame (never the API's JSON),
 * with the workspace the URL names when it is one of the signed-in person's.
 */
export function consoleNotFound(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const person = await web.sessions.current(req);
    if (!person) return sendErrorPage(res, 404, 'Page not found', missing);
    const members = await findConsoleMembers(web.pool, person.memberIds);
    const member = members.find((m) => req.path.split('/')[2] === m.id);
    const csrf = await web.csrf.tokenFor(req, res, person.sessionId, web.sessions.secure);
    const base = member ? `/console/${member.id}` : undefined;
    sendConsoleError(res, { person, members, member, csrf, base }, 404, 'Page not found', missing);
  };
}
