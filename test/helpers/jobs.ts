import type { Principal } from '../../shared/auth/principal.ts';
import { reserveCredits } from '../../shared/billing/metering.ts';
import { findJob, type JobRow } from '../../shared/db/queries/jobs.ts';
import { type DatabasePool, sql } from '../../shared/db/sql.ts';
import { createJob } from '../../shared/jobs/createJob.ts';
import type { JobType } from '../../shared/jobs/specs.ts';
import { api, bearer, type TestContext } from './context.ts';
import type { Tenant } from './fixtures.ts';

export type JobDto = {
  id: string;
  type: string;
  status: string;
  result: unknown;
  error: unknown;
  createdAt: string;
  completedAt: string | null;
};

/** Polls GET /jobs/{id} with `key` until the job has ended (up to `timeoutMs`). */
export async function waitForJob(
  t: TestContext,
  id: string,
  key: string,
  timeoutMs = 60_000,
): Promise<JobDto> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const res = await t.http
      .get(api(`/jobs/${id}`))
      .set(bearer(key))
      .expect(200);
    if (['succeeded', 'failed', 'cancelled'].includes(res.body.job.status)) return res.body.job as JobDto;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`job ${id} did not finish`);
}

/**
 * A live job of `principal` in the tenant's project, created as the api creates one: in one
 * transaction with its credit hold of `maxCost` (no hold when `maxCost` is null).
 */
export function createLiveJob(
  pool: DatabasePool,
  job: { principal: Principal; tenant: Tenant; type: JobType; maxCost: number | null; requestId: string },
) {
  const { principal, tenant, type, maxCost, requestId } = job;
  return pool.transaction(async (tx) => {
    const hold =
      maxCost === null
        ? null
        : await reserveCredits(tx, {
            principal,
            projectId: tenant.projectId,
            operation: type,
            maxCostMinor: maxCost,
            requestId,
          });
    return createJob(tx, {
      type,
      workspaceId: tenant.workspaceId,
      projectId: tenant.projectId,
      keyId: principal.keyId,
      livemode: true,
      input: {},
      holdId: hold?.holdId ?? null,
      requestId,
    });
  });
}

/** The one job the request `requestId` made (the api writes the request id on it), read as the product reads a job. */
export async function jobOfRequest(pool: DatabasePool, requestId: string): Promise<JobRow> {
  const id = await pool.oneFirst(sql.typeAlias('id')`select id from jobs where request_id = ${requestId}`);
  const job = await findJob(pool, id);
  if (!job) throw new Error(`job ${id} of request ${requestId} is gone`);
  return job;
}
