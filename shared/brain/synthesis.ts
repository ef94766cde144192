import type { Db } from '../db/sql.ts';
import { enqueue } from '../queue/enqueue.ts';

/**
 * Schedules the synthesis of a task's brain page `debounceMs` from now, in the caller's transaction.
 * The job key makes a later call move the pending job's run time instead of adding one (graphile-worker's
 * default `replace` mode), so a burst of replies makes one synthesis after the last; a call while the
 * synthesis runs adds the next one, so nothing said during a run is missed.
 */
export async function enqueueBrainSynthesis(tx: Db, taskId: string, debounceMs: number): Promise<void> {
  await enqueue(
    tx,
    'brain__synthesize',
    { taskId },
    {
      jobKey: `brain:task:${taskId}`,
      runAt: new Date(Date.now() + debounceMs).toISOString(),
      maxAttempts: 5,
    },
  );
}
