import type { ConsoleMember } from '../../../shared/db/queries/members.ts';
import type { Person } from '../sessions.ts';

/** Who is looking at a console page, in which workspace, with the token for its forms. */
export type ConsoleContext = {
  person: Person;
  member: ConsoleMember;
  members: readonly ConsoleMember[];
  csrf: string;
  /** The console's base for this workspace: /console/{memberId}. */
  base: string;
  /** What the action that led here did (a `done=` parameter), said at the top of the page. */
  notice?: string;
};
