import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { z } from 'zod';

import { findJob, type JobRow } from '../../../shared/db/queries/jobs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import type { WorkerHandle } from '../../../worker/startWorker.ts';
import { reconcileJobs } from '../../../worker/tasks/jobs__reconcile.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

/**
 * An inline job's finish is written after its queue job is let go (worker/deferredFinishes.ts):
 * these prove what that costs nothing in correctness. A stopping worker writes what its last jobs
 * left; a finish that fails is retried; one that never lands leaves the job to the reconciler.
 */
let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  // Fails the next `failures` metering claims, i.e. finish statements (a sequence: the failing
  // statement's own writes roll back, its nextval does not).
  for (const statement of [
    sql.unsafe`create sequence finish_fault_seq`,
    sql.unsafe`create table finish_fault (failures bigint not null)`,
    sql.unsafe`insert into finish_fault values (0)`,
    sql.unsafe`
      create function finish_fault() returns trigger language plpgsql as $$
      begin
        if nextval('finish_fault_seq') <= (select failures from finish_fault) then
          raise exception 'injected finish failure';
        end if;
        return new;
      end $$`,
    sql.unsafe`
      create trigger finish_fault before insert on metering_claims
      for each row execute function finish_fault()`,
  ]) {
    await t.deps.pool.query(statement);
  }
});
afterAll(() => t.close());

async function injectFailures(failures: number): Promise<void> {
  await t.deps.pool.query(sql.unsafe`select setval('finish_fault_seq', 1, false)`);
  await t.deps.pool.query(sql.unsafe`update finish_fault set failures = ${failures}`);
}

/** Lets every later finish through; the count of attempts so far stays readable. */
const stopInjecting = () => t.deps.pool.query(sql.unsafe`update finish_fault set failures = 0`);

const createInlineJob = () =>
  t.deps.jobs.create(t.deps.pool, {
    type: 'embeddings.create',
    workspaceId: tenant.workspaceId,
    projectId: tenant.projectId,
    keyId: null,
    livemode: false,
    input: { input: ['x'] },
    holdId: null,
    requestId: null,
  });

/** Waits until graphile-worker has completed (deleted) the job's queue job. */
async function queueJobGone(job: JobRow): Promise<void> {
  const remaining = z.object({ n: z.number() });
  for (const deadline = Date.now() + 20_000; Date.now() < deadline; ) {
    const { n } = await t.deps.pool.one(sql.type(remaining)`
      select count(*)::int as n from graphile_worker.jobs q join jobs j on j.queue_job_id = q.id
      where j.id = ${job.id}
    `);
    if (n === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`queue job of ${job.id} still there`);
}

/** How many finish statements reached the metering claim since injectFailures. */
const finishAttempts = () =>
  t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select last_value::int as n from finish_fault_seq
  `);

const meteringCount = (jobId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    select count(*)::int as n from metering_records where job_id = ${jobId}
  `);

/**
 * Runs one inline job on a worker of its own whose next `failures` finish statements fail; `settle`
 * runs once the queue job is gone (a stop, or a drain of the pending finishes).
 */
async function jobWithFailingFinishes(
  failures: number,
  settle: (worker: WorkerHandle) => Promise<void>,
): Promise<JobRow> {
  const worker = await t.startWorker();
  try {
    await injectFailures(failures);
    const job = await createInlineJob();
    await queueJobGone(job);
    await settle(worker);
    return job;
  } finally {
    await stopInjecting();
    await worker.stop();
  }
}

describe('deferred finishes of inline jobs', () => {
  it('let the queue job go before the finish lands', async () => {
    const worker = await t.startWorker();
    // Metering claims are locked: every finish statement waits here, the first in the database,
    // the next in the worker's batcher behind it.
    const blocker = new pg.Client({ connectionString: t.databaseUrl });
    await blocker.connect();
    let stopping: Promise<void> | undefined;
    try {
      await blocker.query('begin');
      await blocker.query('lock table metering_claims in share mode');
      const first = await createInlineJob();
      await queueJobGone(first);
      const second = await createInlineJob();
      await queueJobGone(second);
      // Both queue jobs are completed, neither job is finished yet.
      expect((await findJob(t.deps.pool, first.id))?.status).toBe('queued');
      expect((await findJob(t.deps.pool, second.id))?.status).toBe('queued');
      stopping = worker.stop();
      await blocker.query('commit');
      await stopping;
      // Then both land, the second from the batcher's queue.
      for (const job of [first, second]) {
        expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'succeeded', cost_minor: 0 });
        expect(await meteringCount(job.id)).toBe(1);
      }
    } finally {
      await blocker.end();
      await (stopping ?? worker.stop());
    }
  });

  it('has a stopping worker wait for a finish it is still retrying', async () => {
    // Retried after 0.1, 0.5 and 2 s: the stop comes while the finish is still pending.
    const job = await jobWithFailingFinishes(3, (worker) => worker.stop());
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'succeeded' });
    expect(await meteringCount(job.id)).toBe(1);
    expect(await finishAttempts()).toBe(4);
  });

  it('retries a finish that fails, and the job ends once, metered once', async () => {
    const job = await jobWithFailingFinishes(2, (worker) => worker.ctx.inlineFinishes.drain());
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'succeeded' });
    expect(await meteringCount(job.id)).toBe(1);
    expect(await finishAttempts()).toBe(3);
  });

  it('leaves a job whose finish never lands to the reconciler, which fails it once', async () => {
    const job = await jobWithFailingFinishes(1_000, (worker) => worker.ctx.inlineFinishes.drain());
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'queued', completed_at: null });
    // Older than the reconciler's minimum age: it may be taken.
    await t.deps.pool.query(sql.typeAlias('void')`
      update jobs set created_at = now() - interval '2 minutes' where id = ${job.id}
    `);
    const logger = createLogger('silent', 'test');
    const first = await reconcileJobs({ pool: t.deps.pool, logger }, {});
    expect(first.failedJobs).toContain(job.id);
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({
      status: 'failed',
      error: { code: 'internal_error' },
    });
    expect((await reconcileJobs({ pool: t.deps.pool, logger }, {})).failedJobs).not.toContain(job.id);
    expect(await meteringCount(job.id)).toBe(0);
  });
});
