import type { RequestHandler } from 'express';

import { apiBasePath } from '../../../shared/config.ts';
import { findTriggerableStaffMember } from '../../../shared/db/queries/staff.ts';
import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { AppError, errors } from '../../../shared/errors/appError.ts';
import { titleFromInput, toTriggeredTaskDto } from '../../../shared/tasks/dto.ts';
import { createTaskWithMessage, submitUserMessage } from '../../../shared/tasks/messages.ts';
import type { AppDeps } from '../../deps.ts';
import { actorFromRequest } from '../tasks/actor.ts';

type TriggerBody = { input: string; subject?: string; threadId?: string; projectId?: string };

/**
 * POST /staff/{address}/trigger: hands work to the staff member at the address, as a new task
 * (titled by the subject) or as a message on an earlier task of the workspace (threadId). The
 * trigger itself is free; the run is billed by the reply job. An Idempotency-Key's answer is stored
 * in the transaction that creates the task.
 */
export function triggerStaff({ idempotency }: AppDeps): RequestHandler {
  return async (req, res) => {
    const address = req.params.address as string;
    const body = req.body as TriggerBody;
    const actor = actorFromRequest(req);
    await idempotency.answerFromTransaction(req, res, 202, async (tx) => {
      const task = await triggeredTask(tx);
      return { body: { task: toTriggeredTaskDto(task) }, location: `${apiBasePath}/tasks/${task.id}` };
    });

    async function triggeredTask(tx: Db) {
      const staff = await findTriggerableStaffMember(tx, actor.workspaceId, address);
      if (!staff) {
        throw new AppError(
          'channel_route_not_found',
          `No staff member of this workspace answers at '${address}'.`,
        );
      }
      if (body.threadId !== undefined) {
        const thread = await findWorkspaceTask(tx, actor.workspaceId, body.threadId);
        if (!thread) throw errors.notFound('task', body.threadId);
        await submitUserMessage(tx, {
          actor,
          taskId: thread.id,
          text: body.input,
          fileIds: [],
          replyStaffId: staff.id,
        });
        // Re-read for the updated_at the new message set.
        return (await findWorkspaceTask(tx, actor.workspaceId, thread.id))!;
      }
      const title = body.subject?.trim() ? body.subject.trim() : titleFromInput(body.input);
      const created = await createTaskWithMessage(tx, {
        actor,
        title,
        text: body.input,
        fileIds: [],
        assigneeStaffId: staff.id,
      });
      return created.task;
    }
  };
}
