import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import type { Principal } from '../../../shared/auth/principal.ts';
import { findJob } from '../../../shared/db/queries/jobs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { StorageUnavailableError } from '../../../shared/storage/storageFailure.ts';
import type { TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { createLiveJob } from '../../helpers/jobs.ts';
import { contextWithLivePrincipal } from '../../helpers/tenantContext.ts';
import { runDueJobs, runWork, workerContextFor } from '../../helpers/workerContext.ts';

/**
 * A job whose last attempt meets a storage outage is not failed for good: the attempt is postponed,
 * uncounted, and the job stays queued, its hold kept; any other error on the last attempt fails it.
 */
let t: TestContext;
let tenant: Tenant;
let principal: Principal;

beforeAll(async () => {
  ({ t, tenant, principal } = await contextWithLivePrincipal({ credits: 1000 }));
});
afterAll(() => t.close());

const target = { bucket: 'svc-files', endpoint: 'http://s3.example' };

/** A live OCR job whose queue job has one attempt left. */
async function lastAttemptJob() {
  const job = await createLiveJob(t.deps.pool, {
    principal,
    tenant,
    type: 'ocr.extract',
    maxCost: 40,
    requestId: 'req_s3',
  });
  // The underlying table: graphile-worker's public view is read-only.
  await t.deps.pool.query(sql.unsafe`
    update graphile_worker._private_jobs set attempts = max_attempts - 1 where payload->>'jobId' = ${job.id}
  `);
  return job;
}

const queueJobs = (jobId: string) =>
  t.deps.pool.any(sql.type(
    z.object({ attempts: z.number(), max_attempts: z.number(), wait_seconds: z.number() }),
  )`
    select attempts, max_attempts, extract(epoch from run_at - now())::float8 as wait_seconds
    from graphile_worker._private_jobs where payload->>'jobId' = ${jobId}
  `);

const runOcr = (error: Error) =>
  runDueJobs(t, {
    ocr__extract: (payload, helpers) =>
      runWork(workerContextFor(t), payload, helpers, async () => {
        throw error;
      }),
  });

describe('a storage outage on the last attempt', () => {
  it('postpones the attempt instead of failing the job; another error fails it', async () => {
    const postponed = await lastAttemptJob();
    await runOcr(new StorageUnavailableError('S3 could not be reached (ECONNREFUSED)', target, undefined));
    expect((await findJob(t.deps.pool, postponed.id))?.status).toBe('queued');
    const [next, ...more] = await queueJobs(postponed.id);
    expect(more).toEqual([]);
    expect(next).toMatchObject({ attempts: 0, max_attempts: 1 });
    expect(next!.wait_seconds).toBeGreaterThan(5);
    expect(next!.wait_seconds).toBeLessThanOrEqual(15);

    const failed = await lastAttemptJob();
    await runOcr(new Error('the provider broke'));
    expect((await findJob(t.deps.pool, failed.id))?.status).toBe('failed');
  });
});
