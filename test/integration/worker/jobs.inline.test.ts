import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type JobHelpers, runOnce } from 'graphile-worker';
import { z } from 'zod';

import { findJob } from '../../../shared/db/queries/jobs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { graphileLogger } from '../../../worker/graphileLogger.ts';
import { PermanentJobError } from '../../../worker/jobEngine.ts';
import { type TestContext } from '../../helpers/context.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { type JobWork, runDueJobs, runWork, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ credits: 1000 })));
afterAll(() => t.close());

const prompt = 'a prompt that must not be stored';

const testJob = () => ({
  type: 'text.generate' as const,
  workspaceId: tenant.workspaceId,
  projectId: tenant.projectId,
  keyId: null,
  livemode: false,
  input: { prompt, maxTokens: 50, stream: false },
  holdId: null,
  requestId: 'req_inline_test',
});

const payloadOf = (jobId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ payload: z.record(z.string(), z.unknown()) }))`
    select payload from graphile_worker._private_jobs where payload->>'jobId' = ${jobId}
  `);

const meteringOf = (jobId: string) =>
  t.deps.pool.any(sql.type(z.object({ cost_minor: z.number(), usage: z.unknown() }))`
    select cost_minor, usage from metering_records where job_id = ${jobId}
  `);

/** Makes every pending graphile job due now (a retry would otherwise wait out its backoff). */
const makeDue = () =>
  t.deps.pool.query(sql.typeAlias('void')`
    select from graphile_worker.reschedule_jobs(
      array(select id from graphile_worker.jobs), run_at => now(), attempts => null, max_attempts => null,
      priority => null
    )
  `);

const textTask = (work: JobWork, after?: () => void) => ({
  text__generate: async (payload: unknown, helpers: JobHelpers) => {
    await runWork(workerContextFor(t), payload, helpers, work);
    after?.();
  },
});

describe('inline (unbilled synchronous) jobs', () => {
  it('carry their input in the payload: the row never holds the prompt, and stays queued until finished', async () => {
    const job = await t.deps.jobs.create(t.deps.pool, testJob());
    expect(job.input).toEqual({});
    expect(job.status).toBe('queued');
    const payload = await payloadOf(job.id);
    expect(payload).toMatchObject({
      jobId: job.id,
      inline: { type: 'text.generate', input: testJob().input },
    });
    await runDueJobs(
      t,
      textTask(async (running) => {
        expect(running.input).toEqual(testJob().input);
        expect(running.livemode).toBe(false);
        return { result: { text: 'hi' }, usage: { outputTokens: 1 }, costMinor: 0 };
      }),
    );
    const finished = await findJob(t.deps.pool, job.id);
    expect(finished).toMatchObject({ status: 'succeeded', result: { text: 'hi' }, cost_minor: 0, input: {} });
    expect(await meteringOf(job.id)).toEqual([{ cost_minor: 0, usage: { outputTokens: 1 } }]);
  });

  it('is finished and metered once when a retry repeats work whose finish already committed', async () => {
    const job = await t.deps.jobs.create(t.deps.pool, testJob());
    let runs = 0;
    let crashAfterCommit = true;
    const task = textTask(
      async (running) => {
        if (running.id !== job.id) throw new Error(`unexpected job ${running.id}`);
        runs += 1;
        return { result: { text: `run ${runs}` }, usage: { outputTokens: runs }, costMinor: 0 };
      },
      () => {
        // The finish committed; graphile-worker never hears of it (as if the worker died here).
        if (crashAfterCommit) {
          crashAfterCommit = false;
          throw new Error('worker died after committing');
        }
      },
    );
    await runDueJobs(t, task);
    await makeDue();
    await runDueJobs(t, task);
    expect(runs).toBe(2);
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({
      status: 'succeeded',
      result: { text: 'run 1' },
    });
    expect(await meteringOf(job.id)).toEqual([{ cost_minor: 0, usage: { outputTokens: 1 } }]);
  });

  it('made concurrently, are inserted together yet each once, and finish and meter once each', async () => {
    const jobs = await Promise.all(
      Array.from({ length: 40 }, () => t.deps.jobs.create(t.deps.pool, testJob())),
    );
    const ids = jobs.map((j) => j.id);
    expect(new Set(ids).size).toBe(40);
    const queued = await t.deps.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      select payload->>'jobId' as id from graphile_worker._private_jobs
      where payload->>'jobId' = any(${sql.array(ids, 'text')})
    `);
    expect([...queued].sort()).toEqual([...ids].sort());
    await runOnce({
      connectionString: t.databaseUrl,
      taskList: textTask(async (running) => ({
        result: { text: running.id },
        usage: { outputTokens: 1 },
        costMinor: 0,
      })),
      logger: graphileLogger(createLogger('silent', 'test')),
      concurrency: 8,
    });
    const finished = await t.deps.pool.any(sql.type(
      z.object({ id: z.string(), status: z.string(), text: z.string().nullable(), metered: z.number() }),
    )`
      select j.id, j.status, j.result->>'text' as text,
             (select count(*) from metering_records m where m.job_id = j.id) as metered
      from jobs j where j.id = any(${sql.array(ids, 'text')})
    `);
    expect(finished).toHaveLength(40);
    for (const job of finished) {
      expect(job).toEqual({ id: job.id, status: 'succeeded', text: job.id, metered: 1 });
    }
  });

  it('fails for good, unmetered, on a permanent error', async () => {
    const job = await t.deps.jobs.create(t.deps.pool, testJob());
    await runDueJobs(
      t,
      textTask(async () => {
        throw new PermanentJobError('unsupported_media_type', 'cannot read this');
      }),
    );
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({
      status: 'failed',
      error: { code: 'unsupported_media_type', message: 'cannot read this' },
    });
    expect(await meteringOf(job.id)).toEqual([]);
  });

  it('are not made inside a caller transaction: that job keeps its input, which the worker reads from the row', async () => {
    const job = await t.deps.pool.transaction((tx) => t.deps.jobs.create(tx, testJob()));
    expect(job.input).toEqual(testJob().input);
    expect(await payloadOf(job.id)).toEqual({ jobId: job.id });
    let seen: { input: unknown; status: string | undefined } | undefined;
    await runDueJobs(
      t,
      textTask(async (running) => {
        seen = { input: running.input, status: (await findJob(t.deps.pool, running.id))?.status };
        return { result: { text: 'hi' }, usage: {}, costMinor: 0 };
      }),
    );
    // Read from the row (the payload carries only the id); a synchronous job is not marked running.
    expect(seen).toEqual({ input: testJob().input, status: 'queued' });
    expect(await findJob(t.deps.pool, job.id)).toMatchObject({ status: 'succeeded' });
  });
});
