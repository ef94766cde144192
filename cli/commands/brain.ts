import { addBrainPage } from '../../shared/brain/pages.ts';
import { slugify } from '../../shared/brain/slug.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { CliError, requireFlag } from '../cliError.ts';
import { type CommandTable, requiredString } from '../commandTable.ts';
import { existingWorkspace, memberFlag, requireWorkspaceMember, workspaceFlag } from '../sharedFlags.ts';

export const brainCommands: CommandTable = {
  'brain add-page': {
    summary: "Adds a page to the workspace's brain (found by POST /brain/search).",
    flags: {
      workspace: workspaceFlag,
      title: requiredString('T', 'Title, at most 500 characters.'),
      body: requiredString('B', 'Page text.'),
      'private-to': memberFlag("Member id (mem_…): only that member's keys find the page.", {
        required: false,
      }),
    },
    run: async (pool, v) => {
      const workspaceId = await existingWorkspace(pool, v);
      const title = requireFlag(v, 'title');
      if (title.length > 500) {
        throw new CliError('invalid_arguments', '--title may have at most 500 characters');
      }
      const body = requireFlag(v, 'body');
      const privateTo = v['private-to'] as string | undefined;
      if (privateTo !== undefined) await requireWorkspaceMember(pool, workspaceId, privateTo);
      const page = await addBrainPage(pool, {
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
