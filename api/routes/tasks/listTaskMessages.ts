import { listTaskMessages as listMessages } from '../../../shared/db/queries/taskMessages.ts';
import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { found } from '../../../shared/errors/appError.ts';
import { toMessageDto } from '../../../shared/tasks/dto.ts';
import type { AppDeps } from '../../deps.ts';
import { decodeCursor, encodeCursor } from '../../http/cursor.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

const defaultLimit = 50;

/**
 * GET /tasks/{taskId}/messages: oldest first, `limit` per page (the validator bounds it to 1–100),
 * resumed from an opaque cursor that only this endpoint issues for this task. `messages` mirrors
 * `data` for clients written before pagination.
 */
export function listTaskMessages(deps: AppDeps) {
  const { pool } = deps;
  return async (call: OperationCall): Promise<Answer> => {
    const taskId = call.params.taskId!;
    const task = found(await findWorkspaceTask(pool, call.principal!.workspaceId, taskId), 'task', taskId);
    const limit = call.query.limit === undefined ? defaultLimit : Number(call.query.limit);
    const key = await deps.cursorKeys.get();
    const raw = call.query.cursor;
    const after = raw === undefined ? 0 : decodeCursor(key, String(raw), 'messages', task.id);
    // One row more than the page tells whether another page follows.
    const rows = await listMessages(pool, task.id, after, limit + 1);
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    const last = page.at(-1);
    const data = page.map(toMessageDto);
    const body = {
      data,
      nextCursor:
        hasMore && last ? encodeCursor(key, { purpose: 'messages', taskId: task.id, seq: last.seq }) : null,
      hasMore,
      messages: data,
    };
    return { status: 200, body };
  };
}
