import { listActiveStaff } from '../../../shared/db/queries/staff.ts';
import { toStaffDto } from '../../../shared/tasks/dto.ts';
import type { AppDeps } from '../../deps.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

/** GET /staff: every active staff member of the key's workspace, with its trigger address or null. */
export function listStaff({ pool }: AppDeps) {
  return async (call: OperationCall): Promise<Answer> => {
    const staff = await listActiveStaff(pool, call.principal!.workspaceId);
    return { status: 200, body: { staff: staff.map(toStaffDto) } };
  };
}
