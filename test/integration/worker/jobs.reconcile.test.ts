import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, makeWorkerUtils, run, type WorkerUtils } from 'graphile-worker';
import { z } from 'zod';

import type { Principal } from '../../../shared/auth/principal.ts';
import { findJob } from '../../../shared/db/queries/jobs.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { type JobType } from '../../../shared/jobs/specs.ts';
import { type JobDefinitions, PermanentJobError, WorkerStopping } from '../../../worker/jobEngine.ts';
import { jobTask } from '../../../worker/taskList.ts';
import { reconcileJobs } from '../../../worker/tasks/jobs__reconcile.ts';
import { taskReply } from '../../../worker/tasks/task__reply.ts';
import { api, bearer, postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, principalFor, type Tenant } from '../../helpers/fixtures.ts';
import { createLiveJob } from '../../helpers/jobs.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';
import { createTask } from '../api/tasks.helpers.ts';

const crashableWorker = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../helpers/crashableWorker.ts',
);

let t: TestContext;
let tenant: Tenant;
let principal: Principal;
let utils: WorkerUtils;
const quiet = new Logger(() => () => {});

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 1000 });
  principal = await principalFor(t.deps.pool, tenant.liveKey);
  utils = await makeWorkerUtils({ connectionString: t.databaseUrl, logger: quiet });
});
afterAll(async () => {
  await utils.release();
  await t.close();
});

/** A live billed job holding `maxCost`, whose queue job gets a single attempt (so this one is the last). */
async function billedJob(type: JobType, maxCost = 40) {
  const job = await createLiveJob(t.deps.pool, {
    principal,
    tenant,
    type,
    maxCost,
    requestId: 'req_reconcile',
  });
  await utils.rescheduleJobs([String(await queueJobId(job.id))], { maxAttempts: 1 });
  return job;
}

const queueJobId = (jobId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ queue_job_id: z.number() }))`
    select queue_job_id from jobs where id = ${jobId}
  `);

const holdOf = (jobId: string) =>
  t.deps.pool.one(sql.type(z.object({ status: z.string(), amount_minor: z.number() }))`
    select h.status, h.amount_minor from credit_holds h join jobs j on j.hold_id = h.id where j.id = ${jobId}
  `);

const jobEvents = (jobId: string) =>
  t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
    select type from events where data->'job'->>'id' = ${jobId} order by created_at
  `);

/** The reconciler leaves young jobs and holds alone; these are made to look older than its limits. */
async function age(jobId: string): Promise<void> {
  await t.deps.pool.query(sql.unsafe`
    update jobs set created_at = now() - interval '10 minutes' where id = ${jobId}
  `);
  await t.deps.pool.query(sql.unsafe`
    update credit_holds set created_at = now() - interval '10 minutes'
    where id = (select hold_id from jobs where id = ${jobId})
  `);
}

const meteredCosts = (jobId: string) =>
  t.deps.pool.anyFirst(sql.type(z.object({ cost_minor: z.number() }))`
    select cost_minor from metering_records where job_id = ${jobId}
  `);

const reserved = async () => (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.reserved_minor;

const definitions = (): JobDefinitions => ({ 'task.reply': taskReply(workerContextFor(t)) });

// DDL takes no bind parameters: each status the tests refuse is a literal of its own.
const refusable = { failed: sql.fragment`'failed'`, running: sql.fragment`'running'` };

/** Runs `work` while setting a job's status to `status` fails in the database, as if it were unavailable. */
async function withStatusRefused(
  status: keyof typeof refusable,
  work: () => Promise<unknown>,
): Promise<void> {
  await t.deps.pool.query(sql.unsafe`
    create function refuse_status() returns trigger language plpgsql as $$
    begin raise exception 'database unavailable'; end; $$
  `);
  await t.deps.pool.query(sql.unsafe`
    create trigger refuse_status before update of status on jobs for each row
    when (new.status = ${refusable[status]}) execute function refuse_status()
  `);
  try {
    await work();
  } finally {
    await t.deps.pool.query(sql.unsafe`drop trigger refuse_status on jobs`);
    await t.deps.pool.query(sql.unsafe`drop function refuse_status()`);
  }
}

describe('the reconciler', () => {
  it('fails the job of a worker killed on its last attempt and releases its hold, exactly once', async () => {
    const job = await billedJob('deck.export');
    const child = spawn(process.execPath, [crashableWorker], {
      env: { ...process.env, DATABASE_URL: t.databaseUrl, LOG_LEVEL: 'silent', NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes(`working ${job.id}`)) resolve();
      });
      child.once('exit', () => reject(new Error(`worker exited early:\n${output}`)));
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // What the liveness reaper does once the dead worker's heartbeat is stale.
    const lockedBy = await t.deps.pool.oneFirst(sql.type(z.object({ locked_by: z.string() }))`
      select locked_by from graphile_worker.jobs where id = ${await queueJobId(job.id)}
    `);
    await utils.forceUnlockWorkers([lockedBy]);
    expect((await findJob(t.deps.pool, job.id))?.status).toBe('running');
    expect(await reserved()).toBe(40);
    await age(job.id);

    const first = await reconcileJobs(workerContextFor(t), definitions());
    expect(first.failedJobs).toEqual([job.id]);
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({
      status: 'failed',
      error: { code: 'internal_error' },
      cost_minor: 0,
    });
    expect(await holdOf(job.id)).toEqual({ status: 'released', amount_minor: 40 });
    expect(await reserved()).toBe(0);
    expect(await jobEvents(job.id)).toEqual(['job.failed']);
    const again = await reconcileJobs(workerContextFor(t), definitions());
    expect(again.failedJobs).not.toContain(job.id);
    expect(await jobEvents(job.id)).toEqual(['job.failed']);
  });

  it('never ends a job twice when reconcilers run at once', async () => {
    const jobs = await Promise.all([1, 2, 3, 4, 5].map(() => billedJob('deck.export', 10)));
    for (const job of jobs) {
      await utils.permanentlyFailJobs([String(await queueJobId(job.id))], 'test: attempts used up');
      await age(job.id);
    }
    const passes = await Promise.all(
      [1, 2, 3, 4].map(() => reconcileJobs(workerContextFor(t), definitions())),
    );
    const failed = passes.flatMap((p) => p.failedJobs).filter((id) => jobs.some((j) => j.id === id));
    expect(failed.sort()).toEqual(jobs.map((j) => j.id).sort());
    for (const job of jobs) {
      expect(await jobEvents(job.id)).toEqual(['job.failed']);
      expect((await holdOf(job.id)).status).toBe('released');
    }
    expect(await reserved()).toBe(0);
  });

  it('ends a job whose last attempt failed in the database before it could record the failure', async () => {
    const job = await billedJob('deck.export');
    // The final-failure transaction itself fails: the attempt ends with the job still running.
    await withStatusRefused('failed', () =>
      runDueJobs(t, {
        deck__export: jobTask(workerContextFor(t), {
          run: async () => {
            throw new PermanentJobError('unsupported_media_type', 'unreadable');
          },
        }),
      }),
    );
    expect((await findJob(t.deps.pool, job.id))?.status).toBe('running');
    expect((await holdOf(job.id)).status).toBe('held');
    await age(job.id);
    expect((await reconcileJobs(workerContextFor(t), definitions())).failedJobs).toContain(job.id);
    expect((await findJob(t.deps.pool, job.id))?.status).toBe('failed');
    expect((await holdOf(job.id)).status).toBe('released');
  });

  it('ends a job whose running mark kept failing until its attempts were used up', async () => {
    const job = await billedJob('deck.export');
    let ran = false;
    await withStatusRefused('running', () =>
      runDueJobs(t, {
        deck__export: jobTask(workerContextFor(t), {
          run: async () => {
            ran = true;
            return { result: {}, usage: {}, costMinor: 1 };
          },
        }),
      }),
    );
    expect(ran).toBe(false);
    expect((await findJob(t.deps.pool, job.id))?.status).toBe('queued');
    await age(job.id);
    expect((await reconcileJobs(workerContextFor(t), definitions())).failedJobs).toContain(job.id);
    const failed = await t.http
      .get(api(`/jobs/${job.id}`))
      .set(bearer(tenant.testKey))
      .expect(200);
    expect(failed.body.job).toMatchObject({ status: 'failed', error: { code: 'internal_error' } });
    expect((await holdOf(job.id)).status).toBe('released');
  });

  it('hands a job back, not failing it, when its worker stops during the last attempt', async () => {
    const job = await billedJob('deck.export');
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const stopping = await run({
      connectionString: t.databaseUrl,
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 100,
      logger: quiet,
      // The work below only ends when the worker's abort signal fires.
      preset: { worker: { gracefulShutdownAbortTimeout: 100 } },
      taskList: {
        deck__export: jobTask(workerContextFor(t), {
          run: (_job, _prepared, signal) =>
            new Promise((_resolve, reject) => {
              started();
              signal.addEventListener('abort', () => reject(new WorkerStopping()), { once: true });
            }),
        }),
      },
    });
    await running;
    await stopping.stop();
    expect((await findJob(t.deps.pool, job.id))?.status).toBe('queued');
    await runDueJobs(t, {
      deck__export: jobTask(workerContextFor(t), {
        run: async () => ({ result: { pages: 1 }, usage: { pages: 1 }, costMinor: 7 }),
      }),
    });
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'succeeded', cost_minor: 7 });
    expect((await holdOf(job.id)).status).toBe('settled');
    expect(await meteredCosts(job.id)).toEqual([7]);
    expect(await jobEvents(job.id)).toEqual(['job.succeeded']);
  });

  it('writes the failed reply of an abandoned task reply, so the task does not wait silently', async () => {
    const taskId = await createTask(t, tenant.liveKey, { input: 'Summarise the notes.' });
    const jobId = await t.deps.pool.oneFirst(sql.unsafe`
      select id from jobs where input->>'taskId' = ${taskId} and type = 'task.reply'
    `);
    await utils.permanentlyFailJobs([String(await queueJobId(jobId as string))], 'test: attempts used up');
    await age(jobId as string);
    expect((await reconcileJobs(workerContextFor(t), definitions())).failedJobs).toContain(jobId);
    const messages = await t.http
      .get(api(`/tasks/${taskId}/messages`))
      .set(bearer(tenant.liveKey))
      .expect(200);
    expect(messages.body.data.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
    expect(messages.body.data[1].text).toContain('could not produce a reply');
  });

  it('leaves a reply waiting for its turn alone, and hands the turn on when it ends the one before', async () => {
    const taskId = await createTask(t, tenant.liveKey, { input: 'First question.' });
    await postAs(t.http, tenant.liveKey, `/tasks/${taskId}/messages`)
      .send({ input: 'Second question.' })
      .expect(202);
    const replyJobs = () =>
      t.deps.pool.many(sql.type(
        z.object({ id: z.string(), status: z.string(), queue_job_id: z.number().nullable() }),
      )`
        select j.id, j.status, j.queue_job_id from jobs j join task_messages u on u.id = j.input ->> 'messageId'
        where u.task_id = ${taskId} order by u.seq
      `);
    const [first, second] = await replyJobs();
    // Only the first reply has a queue job; the second waits for it to end.
    expect(first!.queue_job_id).not.toBeNull();
    expect(second!.queue_job_id).toBeNull();
    await age(first!.id);
    await age(second!.id);
    expect((await reconcileJobs(workerContextFor(t), definitions())).failedJobs).not.toContain(second!.id);

    await utils.permanentlyFailJobs([String(first!.queue_job_id)], 'test: attempts used up');
    const pass = await reconcileJobs(workerContextFor(t), definitions());
    expect(pass.failedJobs).toContain(first!.id);
    expect(pass.failedJobs).not.toContain(second!.id);
    const [firstAfter, secondAfter] = await replyJobs();
    expect(firstAfter!.status).toBe('failed');
    // Ending the first reply dispatched the second, in the same transaction.
    expect(secondAfter).toMatchObject({ status: 'queued', queue_job_id: expect.any(Number) });
    const queued = await t.deps.pool.oneFirst(sql.unsafe`
      select count(*)::int from graphile_worker.jobs where id = ${secondAfter!.queue_job_id}
    `);
    expect(queued).toBe(1);
  });

  it('releases a hold left open by a job that already ended', async () => {
    const job = await billedJob('deck.export', 25);
    // A finished job still carrying an open hold: nothing would ever settle it.
    await t.deps.pool.query(sql.unsafe`
      update jobs set status = 'succeeded', completed_at = now(), cost_minor = 0 where id = ${job.id}
    `);
    await age(job.id);
    expect(await reserved()).toBe(25);
    const pass = await reconcileJobs(workerContextFor(t), definitions());
    expect(pass.releasedHolds).toHaveLength(1);
    expect(await reserved()).toBe(0);
    expect((await reconcileJobs(workerContextFor(t), definitions())).releasedHolds).toEqual([]);
  });
});
