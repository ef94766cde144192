import type { TaskList } from 'graphile-worker';

import type { WorkerContext } from './context.ts';
import { maintenancePrune } from './tasks/maintenance__prune.ts';
import { statusProbe } from './tasks/status__probe.ts';

/** Task identifier (= file name) → task. Each capability adds its tasks here. */
export function makeTaskList(ctx: WorkerContext): TaskList {
  return {
    status__probe: statusProbe(ctx),
    maintenance__prune: maintenancePrune(ctx),
  };
}
