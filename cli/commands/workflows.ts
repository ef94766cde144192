import { findWorkspaceStaffMember } from '../../shared/db/queries/staff.ts';
import { insertWorkflow } from '../../shared/db/queries/workflows.ts';
import { newId } from '../../shared/primitives/ids.ts';
import { parseFieldDefinitions } from '../../shared/workflows/fields.ts';
import { templateKeys } from '../../shared/workflows/template.ts';
import { CliError, requireFlag } from '../cliError.ts';
import { type CommandTable, optionalString, requiredString } from '../commandTable.ts';
import { requireWorkspace, workspaceFlag } from '../sharedFlags.ts';

/**
 * `workflow create`: a prompt template with typed fields (JSON array, see shared/workflows/fields.ts),
 * e.g. `[{"key":"topic","type":"text","required":true,"maxLength":200}]`; every `{{key}}` in the
 * template must name a field.
 */
export const workflowCommands: CommandTable = {
  'workflow create': {
    summary:
      'Creates a workflow: a prompt template with typed fields, run through POST /workflows/{id}/runs.',
    flags: {
      workspace: workspaceFlag,
      name: requiredString('N', 'Name, 1 to 200 characters.'),
      prompt: requiredString('TEMPLATE', 'Prompt template; every {{key}} in it must name a field.'),
      fields: requiredString(
        'JSON',
        'JSON array of field definitions, e.g. [{"key":"topic","type":"text","required":true}].',
      ),
      staff: optionalString('S', 'Staff member id suggested to run it.'),
    },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      const name = requireFlag(v, 'name').trim();
      const prompt = requireFlag(v, 'prompt');
      if (name.length === 0 || name.length > 200) {
        throw new CliError('invalid_arguments', '--name must be 1 to 200 characters');
      }
      if (prompt.trim().length === 0 || prompt.length > 20_000) {
        throw new CliError('invalid_arguments', '--prompt must be 1 to 20000 characters');
      }
      let rawFields: unknown;
      try {
        rawFields = JSON.parse(requireFlag(v, 'fields'));
      } catch {
        throw new CliError('invalid_arguments', '--fields must be a JSON array of field definitions');
      }
      let fields;
      try {
        fields = parseFieldDefinitions(rawFields);
      } catch (error) {
        throw new CliError('invalid_arguments', `--fields: ${(error as Error).message}`);
      }
      const unknown = templateKeys(prompt).filter((key) => !fields.some((f) => f.key === key));
      if (unknown.length > 0) {
        throw new CliError(
          'invalid_arguments',
          `--prompt refers to unknown fields: ${unknown.map((k) => `{{${k}}}`).join(', ')}`,
        );
      }
      await requireWorkspace(pool, workspaceId);
      const staffId = v.staff as string | undefined;
      if (staffId !== undefined && !(await findWorkspaceStaffMember(pool, workspaceId, staffId))) {
        throw new CliError('not_found', `no staff member ${staffId} in workspace ${workspaceId}`);
      }
      const workflow = await insertWorkflow(pool, {
        id: newId('wf'),
        workspaceId,
        name,
        promptTemplate: prompt,
        fields,
        suggestedStaffId: staffId ?? null,
      });
      return { workflow: { id: workflow.id } };
    },
  },
};
