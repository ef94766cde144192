import { insertJob, type JobRow } from '../db/queries/jobs.ts';
import type { Db } from '../db/sql.ts';
import type { JobCaller } from './billedJob.ts';
import { newJobId } from './createJob.ts';
import { settleAndFinishJob } from './finish.ts';
import type { JobType } from './specs.ts';

/**
 * A test key's public job (spec: an already succeeded fixture; nothing runs, nothing is billed).
 * Its row is inserted unqueued, so the operation can write rows that refer to it (a video) before
 * `finishFixtureJob` ends it, in the caller's transaction.
 */
export function insertFixtureJob(
  tx: Db,
  caller: JobCaller,
  job: { type: JobType; projectId: string; input: Record<string, unknown> },
): Promise<JobRow> {
  const principal = caller.principal!;
  return insertJob(tx, {
    id: newJobId(),
    workspaceId: principal.workspaceId,
    projectId: job.projectId,
    keyId: principal.keyId,
    oauthAppId: principal.oauthAppId,
    type: job.type,
    livemode: false,
    input: job.input,
    holdId: null,
    requestId: caller.requestId,
  });
}

/**
 * Ends a fixture job the way a worker ends any job (shared/jobs/finish.ts): metered at zero with
 * its `usage`, finished with its fixture `result`, announced as job.succeeded.
 */
export function finishFixtureJob(
  tx: Db,
  caller: JobCaller,
  job: JobRow,
  fixture: { result: unknown; usage: Record<string, number> },
): Promise<JobRow> {
  return settleAndFinishJob(
    tx,
    { ...job, currency: caller.principal!.currency },
    { status: 'succeeded', result: fixture.result, usage: fixture.usage, costMinor: 0 },
  );
}
