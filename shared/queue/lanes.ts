import type { TaskName } from './taskMap.ts';

/**
 * The queue's lanes: each worker process runs one graphile-worker runner per lane, with its own
 * concurrency, so a kind of work that can be held up by a tenant cannot take the others' slots
 * (worker/lanes.ts says why each exists). Every worker process serves every lane.
 */
export const laneNames = ['main', 'webhooks', 'ocr', 'video'] as const;
export type LaneName = (typeof laneNames)[number];

const laneOfTasks: Partial<Record<TaskName, Exclude<LaneName, 'main'>>> = {
  webhook__deliver: 'webhooks',
  ocr__extract: 'ocr',
  video__generate: 'video',
};

/** The lane whose runner runs `task`; any task not named here runs on the main one. */
export function laneOfTask(task: string): LaneName {
  return laneOfTasks[task as TaskName] ?? 'main';
}
