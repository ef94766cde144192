import { slugify } from '../../shared/brain/slug.ts';
import { insertBrainPage } from '../../shared/db/queries/brainPages.ts';
import { findMember } from '../../shared/db/queries/members.ts';
import { workspaceExists } from '../../shared/db/queries/workspaces.ts';
import { newId } from '../../shared/ids.ts';
import { CliError, requireFlag } from '../cliError.ts';
import type { CommandTable } from '../commandTable.ts';

export const brainCommands: CommandTable = {
  'brain add-page': {
    flags: { workspace: 'string', title: 'string', body: 'string', 'private-to': 'string' },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      if (!(await workspaceExists(pool, workspaceId))) {
        throw new CliError('not_found', `no workspace ${workspaceId}`);
      }
      const title = requireFlag(v, 'title');
      if (title.length > 500) {
        throw new CliError('invalid_arguments', '--title may have at most 500 characters');
      }
      const body = requireFlag(v, 'body');
      const privateTo = v['private-to'] as string | undefined;
      if (privateTo !== undefined) {
        const member = await findMember(pool, privateTo);
        if (!member || member.workspace_id !== workspaceId) {
          throw new CliError('not_found', `no member ${privateTo} in workspace ${workspaceId}`);
        }
      }
      const page = await insertBrainPage(pool, {
        id: newId('page'),
        workspaceId,
        slug: slugify(title),
        title,
        body,
        privateTo: privateTo ?? null,
      });
      return { page: { id: page.id, slug: page.slug } };
    },
  },
};
