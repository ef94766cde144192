import { insertStaffMember } from '../../shared/db/queries/staff.ts';
import { newId, randomBase62 } from '../../shared/primitives/ids.ts';
import { toStaffDto } from '../../shared/tasks/dto.ts';
import { CliError, requireFlag } from '../cliError.ts';
import { type CommandTable, requiredString } from '../commandTable.ts';
import { requireWorkspace, workspaceFlag } from '../sharedFlags.ts';

/** `staff create`: an active staff member; its trigger address is shown only with --api-channel. */
export const staffCommands: CommandTable = {
  'staff create': {
    summary: 'Creates an AI staff member of a workspace.',
    flags: {
      workspace: workspaceFlag,
      name: requiredString('N', 'Name, 1 to 200 characters.'),
      role: requiredString(
        'R',
        'Role: the instructions the staff member replies with, 1 to 20000 characters.',
      ),
      'api-channel': {
        type: 'boolean',
        description: 'Enables its API trigger address (POST /staff/{address}/trigger) and prints it.',
      },
    },
    run: async (pool, v) => {
      const workspaceId = requireFlag(v, 'workspace');
      const name = requireFlag(v, 'name').trim();
      const role = requireFlag(v, 'role').trim();
      if (name.length === 0 || name.length > 200) {
        throw new CliError('invalid_arguments', '--name must be 1 to 200 characters');
      }
      if (role.length === 0 || role.length > 20_000) {
        throw new CliError('invalid_arguments', '--role must be 1 to 20000 characters');
      }
      await requireWorkspace(pool, workspaceId);
      const staff = await insertStaffMember(pool, {
        id: newId('staff'),
        workspaceId,
        name,
        role,
        // An opaque address with ~143 bits of randomness; it only routes, the caller's key authorizes.
        apiAddress: `stf_${randomBase62(24)}`,
        apiChannelEnabled: v['api-channel'] === true,
      });
      const dto = toStaffDto(staff);
      return { staff: { id: dto.id, apiAddress: dto.apiAddress } };
    },
  },
};
