import type { RequestHandler } from 'express';

import { listActiveStaff } from '../../../shared/db/queries/staff.ts';
import { toStaffDto } from '../../../shared/tasks/dto.ts';
import type { AppDeps } from '../../deps.ts';

/** GET /staff: every active staff member of the key's workspace, with its trigger address or null. */
export function listStaff({ pool }: AppDeps): RequestHandler {
  return async (req, res) => {
    const staff = await listActiveStaff(pool, req.principal!.workspaceId);
    res.json({ staff: staff.map(toStaffDto) });
  };
}
