import type { DatabasePool } from 'slonik';

import { requestJobCancel } from '../db/queries/jobs.ts';
import { notify } from '../db/queries/notifications.ts';

/**
 * Asks the worker running `jobId` to stop: the mark (which a worker that has not started yet reads)
 * and the `jobs:cancel` notification (which a running one hears) commit together.
 */
export async function cancelJob(pool: DatabasePool, jobId: string): Promise<void> {
  await pool.transaction(async (tx) => {
    await requestJobCancel(tx, jobId);
    await notify(tx, 'jobs:cancel', { id: jobId });
  });
}
