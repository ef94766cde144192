import { type TaskQueueRow, taskQueues } from '../db/queries/queueStats.ts';
import { countLiveWorkerProcesses } from '../db/queries/workerHeartbeats.ts';
import type { Db } from '../db/sql.ts';
import { type LaneName, laneNames, laneOfTask } from './lanes.ts';

export type LaneStats = {
  lane: LaneName;
  /** Jobs due now that no worker holds. */
  queued: number;
  /** Age of the oldest of them (0 when none): the signal an autoscaler should scale on. */
  latencySeconds: number;
  /** Jobs a worker holds. */
  running: number;
  /** Worker processes with a live heartbeat; each serves every lane. */
  workersAlive: number;
};

/**
 * The queue of the whole fleet, lane by lane (every lane, zeros included), from graphile-worker's
 * tables and the workers' heartbeats: the same answer from any process that can reach the database
 * with the workers' WORKER_STALE_AFTER_MS.
 */
export async function queueStats(db: Db, staleAfterMs: number): Promise<{ lanes: LaneStats[] }> {
  const tasks = await taskQueues(db);
  const workersAlive = await countLiveWorkerProcesses(db, staleAfterMs / 1000);
  return { lanes: byLane(tasks).map((lane) => ({ ...lane, workersAlive })) };
}

/** Per-task queue rows summed by lane, every lane present (zeros included). */
export function byLane(tasks: readonly TaskQueueRow[]): Omit<LaneStats, 'workersAlive'>[] {
  const lanes = new Map(laneNames.map((lane) => [lane, { lane, queued: 0, latencySeconds: 0, running: 0 }]));
  for (const task of tasks) {
    const lane = lanes.get(laneOfTask(task.task))!;
    lane.queued += task.queued;
    lane.running += task.running;
    lane.latencySeconds = Math.max(lane.latencySeconds, Math.round(task.oldest_due_seconds * 1000) / 1000);
  }
  return [...lanes.values()];
}

/**
 * The age in seconds of the oldest job due now and not taken, whatever its lane (0 when none): what a
 * worker dyno, which serves every lane, should be scaled on. One query, read fresh.
 */
export async function oldestDueJobSeconds(db: Db): Promise<number> {
  return Math.max(0, ...byLane(await taskQueues(db)).map((lane) => lane.latencySeconds));
}
