import type { RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config/config.ts';
import { toTriggeredTaskDto } from '../../../shared/tasks/dto.ts';
import { type Trigger, triggerStaffMember } from '../../../shared/tasks/triggerStaff.ts';
import { actorFromRequest } from '../../auth/actor.ts';
import type { AppDeps } from '../../deps.ts';

/**
 * POST /staff/{address}/trigger: hands work to the staff member at the address (triggerStaffMember).
 * An Idempotency-Key's answer is stored in the transaction that creates the task.
 */
export function triggerStaff({ idempotency }: AppDeps): RequestHandler {
  return async (req, res) => {
    const address = req.params.address as string;
    const { input, subject, threadId } = req.body as Trigger;
    const actor = actorFromRequest(req);
    await idempotency.answerFromTransaction(req, res, 202, async (tx) => {
      const task = await triggerStaffMember(tx, actor, address, { input, subject, threadId });
      return { body: { task: toTriggeredTaskDto(task) }, location: `${apiBasePath}/tasks/${task.id}` };
    });
  };
}
