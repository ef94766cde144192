import type { AppDeps } from '../deps.ts';
import type { OperationFunction } from '../pipeline/operationCall.ts';
import { searchBrain } from './brain/searchBrain.ts';
import { getMe } from './platform/getMe.ts';
import { listStaff } from './staff/listStaff.ts';
import { createTask } from './tasks/createTask.ts';
import { getTask } from './tasks/getTask.ts';
import { listTaskMessages } from './tasks/listTaskMessages.ts';
import { sendTaskMessage } from './tasks/sendTaskMessage.ts';
import { runWorkflow } from './workflows/runWorkflow.ts';

/** operationId → its function over an operation call: the operations MCP tools run too (toolCatalogue.ts). */
export type OperationFunctions = Record<string, OperationFunction>;

export function operationFunctions(deps: AppDeps): OperationFunctions {
  return {
    'platform.me': getMe,
    'tasks.create': createTask(deps),
    'tasks.read': getTask(deps),
    'tasks.listMessages': listTaskMessages(deps),
    'tasks.sendMessage': sendTaskMessage(deps),
    'staff.list': listStaff(deps),
    'workflows.run': runWorkflow(deps),
    'brain.search': searchBrain(deps),
  };
}
