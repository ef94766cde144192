import type { TaskList } from 'graphile-worker';

import type { Config } from '../shared/config/config.ts';
import { type LaneName, laneOfTask } from '../shared/queue/lanes.ts';

/**
 * The graphile-worker runners of a worker process, one per lane (shared/queue/lanes.ts):
 * - `main`: the billed generation jobs, task replies, probes, maintenance (WORKER_CONCURRENCY);
 * - `webhooks`: webhook deliveries, which wait on customers' receivers up to the 15 s deadline
 *   (WEBHOOK_CONCURRENCY);
 * - `ocr`: OCR jobs, as many as there are engines (OCR_ENGINES), so a job waits for an engine in
 *   the queue, never in a slot of the main runner;
 * - `video`: video renders (VIDEO_CONCURRENCY), CPU-bound ffmpeg processes that would otherwise
 *   take main-runner slots, and cores, for up to minutes each.
 */
export type Lane = { name: LaneName; taskList: TaskList; concurrency: number };

/** Jobs each runner runs at once. */
export function laneConcurrency(config: Config): Record<LaneName, number> {
  return {
    main: config.workerConcurrency,
    webhooks: config.webhookConcurrency,
    ocr: config.ocrEngines,
    video: config.videoConcurrency,
  };
}

/**
 * The process's task list split by runner; a runner with no task is left out (graphile-worker
 * refuses to fetch for an empty list).
 */
export function splitIntoLanes(taskList: TaskList, concurrency: Record<LaneName, number>): Lane[] {
  const lists: Record<LaneName, TaskList> = { main: {}, webhooks: {}, ocr: {}, video: {} };
  for (const [identifier, task] of Object.entries(taskList)) {
    lists[laneOfTask(identifier)][identifier] = task;
  }
  return (Object.keys(lists) as LaneName[])
    .filter((name) => Object.keys(lists[name]).length > 0)
    .map((name) => ({ name, taskList: lists[name], concurrency: concurrency[name] }));
}

/**
 * Connections of graphile-worker's own pool for a runner: one held for its LISTEN, one per job
 * fetching or completing at once, and for the main runner one more for the crontab and the
 * utilities (maintenance's cleanup).
 */
export function runnerPoolSize(lane: Pick<Lane, 'name' | 'concurrency'>): number {
  return lane.concurrency + (lane.name === 'main' ? 2 : 1);
}
