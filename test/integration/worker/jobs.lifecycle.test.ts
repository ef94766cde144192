import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { JobHelpers } from 'graphile-worker';
import { z } from 'zod';

import type { Principal } from '../../../shared/auth/principal.ts';
import { requestJobCancel } from '../../../shared/db/queries/jobs.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { type JobType } from '../../../shared/jobs/specs.ts';
import { enqueue } from '../../../shared/queue/enqueue.ts';
import { PermanentJobError } from '../../../worker/jobEngine.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { createLiveJob } from '../../helpers/jobs.ts';
import { contextWithLivePrincipal } from '../../helpers/tenantContext.ts';
import { type JobWork, runDueJobs, runWork, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;
let principal: Principal;

beforeAll(async () => {
  ({ t, tenant, principal } = await contextWithLivePrincipal({ credits: 1000 }));
});
afterAll(() => t.close());

const newJob = (type: JobType, maxCost: number | null) =>
  createLiveJob(t.deps.pool, { principal, tenant, type, maxCost, requestId: 'req_test' });

const deckTask = (work: JobWork) => ({
  deck__export: (payload: unknown, helpers: JobHelpers) =>
    runWork(workerContextFor(t), payload, helpers, work),
});

/** GET /jobs/{id} as the tenant's test key, answered 200. */
const getJob = (id: string) =>
  t.http
    .get(api(`/jobs/${id}`))
    .set(bearer(tenant.testKey))
    .expect(200);

const events = (jobId: string) =>
  t.deps.pool.anyFirst(sql.type(z.object({ type: z.string() }))`
    select type from events where data->'job'->>'id' = ${jobId} order by created_at
  `);

describe('job lifecycle', () => {
  it('goes queued → running → succeeded, wakes waiters, bills once and announces job.succeeded', async () => {
    const job = await newJob('deck.export', 50);
    const queued = await getJob(job.id);
    expect(queued.body.job).toEqual({
      id: job.id,
      type: 'deck.export',
      status: 'queued',
      result: null,
      error: null,
      createdAt: expect.any(String),
      completedAt: null,
    });
    const waiting = t.deps.jobWaiter.wait(job.id, { timeoutMs: 20_000 });
    let seenWhileRunning: string | undefined;
    await runDueJobs(
      t,
      deckTask(async () => {
        seenWhileRunning = (await t.http.get(api(`/jobs/${job.id}`)).set(bearer(tenant.testKey))).body.job
          .status;
        return { result: { pages: 3 }, usage: { pages: 3 }, costMinor: 7 };
      }),
    );
    expect(seenWhileRunning).toBe('running');
    const finished = await waiting;
    expect(finished.status).toBe('succeeded');
    const done = await getJob(job.id);
    expect(done.body.job).toMatchObject({
      status: 'succeeded',
      result: { pages: 3 },
      error: null,
      completedAt: expect.any(String),
    });
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: 993,
      reserved_minor: 0,
    });
    expect(await events(job.id)).toEqual(['job.succeeded']);

    // The same job delivered again (a retry after a crash) changes nothing.
    await t.deps.pool.transaction((tx) => enqueue(tx, 'deck__export', { jobId: job.id }));
    await runDueJobs(
      t,
      deckTask(async () => ({ result: { pages: 9 }, usage: {}, costMinor: 99 })),
    );
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: 993,
      reserved_minor: 0,
    });
    const records = await t.deps.pool.anyFirst(sql.type(z.object({ cost_minor: z.number() }))`
      select cost_minor from metering_records where job_id = ${job.id}
    `);
    expect(records).toEqual([7]);
  });

  it('fails permanently with an error, releases the hold and announces job.failed', async () => {
    const job = await newJob('ocr.extract', 40);
    await runDueJobs(t, {
      ocr__extract: (payload, helpers) =>
        runWork(workerContextFor(t), payload, helpers, async () => {
          throw new PermanentJobError('unreadable_input', 'The image could not be decoded.');
        }),
    });
    const res = await getJob(job.id);
    expect(res.body.job).toMatchObject({
      status: 'failed',
      result: null,
      error: { code: 'unreadable_input', message: 'The image could not be decoded.' },
      completedAt: expect.any(String),
    });
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: 993,
      reserved_minor: 0,
    });
    expect(await events(job.id)).toEqual(['job.failed']);
  });

  it('puts a job back to queued when an attempt fails and retries remain', async () => {
    const job = await newJob('video.generate', 10);
    await runDueJobs(t, {
      video__generate: (payload, helpers) =>
        runWork(workerContextFor(t), payload, helpers, async () => {
          throw new Error('provider hiccup');
        }),
    });
    const res = await getJob(job.id);
    expect(res.body.job.status).toBe('queued');
    const reserved = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    expect(reserved?.reserved_minor).toBe(10);
  });

  it('ends as cancelled, unbilled, when cancelled before it ran', async () => {
    const before = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    const job = await newJob('deck.export', 20);
    await requestJobCancel(t.deps.pool, job.id);
    await runDueJobs(
      t,
      deckTask(async () => ({ result: 'should not run', usage: {}, costMinor: 5 })),
    );
    const res = await getJob(job.id);
    expect(res.body.job).toMatchObject({ status: 'cancelled', result: null, error: null });
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toEqual(before);
  });

  it('keeps jobs inside their workspace and internal jobs private', async () => {
    const job = await newJob('deck.export', null);
    const stranger = await createTenant(t.deps.pool);
    const res = await t.http
      .get(api(`/jobs/${job.id}`))
      .set(bearer(stranger.testKey))
      .expect(404);
    expect(res.body.error.code).toBe('not_found');
    const internal = await newJob('text.generate', null);
    await t.http
      .get(api(`/jobs/${internal.id}`))
      .set(bearer(tenant.testKey))
      .expect(404);
  });

  it('starts a synchronous job without writing its row (nobody watches it run), and still bills it once', async () => {
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    const job = await newJob('embeddings.create', 30);
    const version = () =>
      t.deps.pool.one(sql.type(z.object({ status: z.string(), xmin: z.string() }))`
        select status, xmin::text from jobs where id = ${job.id}
      `);
    const created = await version();
    let whileRunning: { status: string; xmin: string } | undefined;
    const work: JobWork = async (running) => {
      whileRunning = await version();
      expect(running).toMatchObject({ id: job.id, status: 'queued', hold_id: job.hold_id, currency: 'USD' });
      return { result: { data: [] }, usage: { inputTokens: 3 }, costMinor: 4 };
    };
    await runDueJobs(t, {
      embeddings__create: (payload, helpers) => runWork(workerContextFor(t), payload, helpers, work),
    });
    // The row version the work saw is the one the api created: the start wrote nothing.
    expect(whileRunning).toEqual(created);
    expect(await version()).toMatchObject({ status: 'succeeded' });
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: before.balance_minor - 4,
      reserved_minor: before.reserved_minor,
    });
    // Delivered again (a retry after a crash), it is not run: the row says it ended.
    await t.deps.pool.transaction((tx) => enqueue(tx, 'embeddings__create', { jobId: job.id }));
    let ranAgain = false;
    await runDueJobs(t, {
      embeddings__create: (payload, helpers) =>
        runWork(workerContextFor(t), payload, helpers, async () => {
          ranAgain = true;
          return { result: null, usage: {}, costMinor: 9 };
        }),
    });
    expect(ranAgain).toBe(false);
    expect(
      await t.deps.pool.anyFirst(sql.type(z.object({ cost_minor: z.number() }))`
        select cost_minor from metering_records where job_id = ${job.id}
      `),
    ).toEqual([4]);
  });
});
