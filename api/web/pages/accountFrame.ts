import type { Response } from 'express';

import { findConsoleMembers } from '../../../shared/db/queries/members.ts';
import { consoleFrame } from '../console/layout.ts';
import { type SafeHtml, sendPage } from '../html.ts';
import type { Person } from '../sessions.ts';
import type { AccountDeps } from './accountDeps.ts';

/**
 * Sends an account page inside the console's frame, its navigation leading back to the person's
 * first workspace, with "Connected apps" as the current section.
 */
export async function sendAccountPage(
  s: AccountDeps,
  res: Response,
  page: { person: Person; csrf: string; title: string; body: SafeHtml; notice?: string },
): Promise<void> {
  const members = await findConsoleMembers(s.pool, page.person.memberIds);
  const member = members[0];
  const frame = { person: page.person, csrf: page.csrf, members, member, base: member && `/console/${member.id}` };
  sendPage(res, 200, page.title, consoleFrame(frame, 'account', page.body, page.notice), { framed: true });
}
