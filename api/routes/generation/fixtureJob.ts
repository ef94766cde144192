import type { Request } from 'express';

import { insertFinishedJob, type JobRow } from '../../../shared/db/queries/jobs.ts';
import type { Db } from '../../../shared/db/sql.ts';
import { recordEvent } from '../../../shared/events.ts';
import { newId } from '../../../shared/ids.ts';
import type { JobType } from '../../../shared/jobs.ts';
import { settleUsage } from '../../../shared/metering.ts';

/** A test key's public job, born succeeded with its fixture result (spec: nothing runs, nothing is billed). */
export async function insertFixtureJob(
  tx: Db,
  req: Request,
  job: { type: JobType; projectId: string; input: Record<string, unknown>; result: unknown },
): Promise<JobRow & { project_id: string }> {
  const principal = req.principal!;
  const row = await insertFinishedJob(tx, {
    id: newId('job'),
    workspaceId: principal.workspaceId,
    projectId: job.projectId,
    keyId: principal.keyId,
    type: job.type,
    livemode: false,
    input: job.input,
    holdId: null,
    requestId: req.requestId,
    result: job.result,
  });
  return { ...row, project_id: job.projectId };
}

/** Settles a fixture job at zero (its metering record) and announces it like any finished job. */
export async function settleFixtureJob(
  tx: Db,
  req: Request,
  job: JobRow & { project_id: string },
  usage: Record<string, number>,
): Promise<void> {
  const principal = req.principal!;
  await settleUsage(tx, {
    holdId: null,
    jobId: job.id,
    workspaceId: principal.workspaceId,
    projectId: job.project_id,
    keyId: principal.keyId,
    operation: job.type,
    livemode: false,
    usage,
    costMinor: 0,
    currency: principal.currency,
    requestId: req.requestId,
  });
  await recordEvent(tx, {
    workspaceId: principal.workspaceId,
    projectId: job.project_id,
    type: 'job.succeeded',
    data: { job: { id: job.id, type: job.type, status: job.status, result: job.result } },
  });
}
