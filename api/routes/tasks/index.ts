import type { AppDeps } from '../../deps.ts';
import type { HandlerTable } from '../handlerTable.ts';
import { triggerStaff } from '../staff/triggerStaff.ts';
import { streamTask } from './streamTask.ts';

/**
 * The tasks and staff operations that are Express handlers (openapi.yaml operationId → handler);
 * the others are operation functions (operationFunctions.ts).
 */
export function taskHandlers(deps: AppDeps): HandlerTable {
  return {
    'tasks.stream': streamTask(deps),
    'staff.trigger': triggerStaff(deps),
  };
}
