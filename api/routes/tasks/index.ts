import type { AppDeps } from '../../deps.ts';
import type { HandlerTable } from '../handlerTable.ts';
import { listStaff } from '../staff/listStaff.ts';
import { triggerStaff } from '../staff/triggerStaff.ts';
import { runWorkflow } from '../workflows/runWorkflow.ts';
import { createTask } from './createTask.ts';
import { getTask } from './getTask.ts';
import { listTaskMessages } from './listTaskMessages.ts';
import { sendTaskMessage } from './sendTaskMessage.ts';
import { streamTask } from './streamTask.ts';

/** The tasks, staff and workflows operations (openapi.yaml operationId → handler). */
export function taskHandlers(deps: AppDeps): HandlerTable {
  return {
    'tasks.create': createTask(deps),
    'tasks.read': getTask(deps),
    'tasks.listMessages': listTaskMessages(deps),
    'tasks.sendMessage': sendTaskMessage(deps),
    'tasks.stream': streamTask(deps),
    'staff.list': listStaff(deps),
    'staff.trigger': triggerStaff(deps),
    'workflows.run': runWorkflow(deps),
  };
}
