import { findWorkspaceTask } from '../../../shared/db/queries/tasks.ts';
import { found } from '../../../shared/errors/appError.ts';
import { toTaskDto } from '../../../shared/tasks/dto.ts';
import type { AppDeps } from '../../deps.ts';
import type { Answer, OperationCall } from '../../pipeline/operationCall.ts';

/** GET /tasks/{taskId}: a task of another workspace is not_found. */
export function getTask({ pool }: AppDeps) {
  return async (call: OperationCall): Promise<Answer> => {
    const taskId = call.params.taskId!;
    const task = found(await findWorkspaceTask(pool, call.principal!.workspaceId, taskId), 'task', taskId);
    return { status: 200, body: { task: toTaskDto(task) } };
  };
}
