import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { startWorker, type WorkerHandle } from '../../../worker/startWorker.ts';
import { api, bearer, type TestContext } from '../../helpers/context.ts';
import { type FaultProxy, startFaultProxy } from '../../helpers/faultProxy.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { capturingLogger } from '../../helpers/logCapture.ts';
import type { OpenAiMock } from '../../helpers/openaiMock.ts';
import { contextWithOpenAiMock } from '../../helpers/tenantContext.ts';
import { createTask, waitUntil } from '../api/tasks.helpers.ts';

/**
 * PostgreSQL goes away while a job runs, so the job's end and then graphile-worker's own write of the
 * failed attempt both fail ("Failed to fail jobs"): the queue row stays locked by this worker, alive
 * and heartbeating. The worker reaches PostgreSQL through a proxy the test cuts and restores; the
 * test reads and asserts on its own connection.
 */
let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let proxy: FaultProxy;
let worker: WorkerHandle;
const log = capturingLogger({ level: 'info' });

// docs/architecture.md ("When PostgreSQL goes away"): a lock left by a failed queue write is released
// at the first reaper pass (every 5 s) after the database is back, and the job is fetched again
// within the poll interval (2 s); the rest is the reply itself. Twice that, for a busy machine.
const endsWithinMs = 20_000;

beforeAll(async () => {
  ({ t, tenant, mock } = await contextWithOpenAiMock({ credits: 100_000 }));
  proxy = await startFaultProxy(t.databaseUrl);
  t.closeWith(proxy);
  worker = await startWorker(t.config, { databaseUrl: proxy.url, s3: t.s3 }, log.logger);
  t.closeWith({ close: () => worker.stop() });
});
afterAll(async () => {
  await t.close();
});

const replyJob = (taskId: string) =>
  t.deps.pool.one(sql.type(z.object({ id: z.string(), status: z.string(), hold_id: z.string().nullable() }))`
    select j.id, j.status, j.hold_id from jobs j join task_reply_queue r on r.job_id = j.id
    where r.task_id = ${taskId}
  `);

const jobStatus = (jobId: string) =>
  t.deps.pool.oneFirst(
    sql.type(z.object({ status: z.string() }))`select status from jobs where id = ${jobId}`,
  );

const queueRow = (jobId: string) =>
  t.deps.pool.maybeOne(sql.type(z.object({ locked_by: z.string().nullable(), attempts: z.number() }))`
    select q.locked_by, q.attempts from graphile_worker.jobs q join jobs j on j.queue_job_id = q.id
    where j.id = ${jobId}
  `);

const holdStatus = (holdId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ status: z.string() }))`
    select status from credit_holds where id = ${holdId}
  `);

const meteredCosts = (jobId: string) =>
  t.deps.pool.anyFirst(sql.type(z.object({ cost_minor: z.number() }))`
    select cost_minor from metering_records where job_id = ${jobId}
  `);

const logged = (message: string) => log.lines.some((line) => line.includes(message));

describe('a job whose end cannot be written while PostgreSQL is away', () => {
  it('ends once the database is back, its hold settled and billed once', async () => {
    let answer!: () => void;
    mock.queueChat({ kind: 'held', until: new Promise<void>((resolve) => (answer = resolve)) });
    mock.queueChat({ kind: 'ok', text: 'Answered on the second attempt.' });
    const firstCall = mock.nextRequest('/chat/completions');
    const taskId = await createTask(t, tenant.liveKey, { input: 'Summarise our notes' });
    await firstCall;
    const job = await replyJob(taskId);
    expect(job.status).toBe('running');
    expect(job.hold_id).not.toBeNull();

    // The database goes away mid-reply; the provider's answer then arrives: the job's end, and
    // graphile-worker's write of the failed attempt, both fail.
    proxy.cut();
    answer();
    await waitUntil(async () => (logged('Failed to fail jobs') ? true : undefined));
    expect(await queueRow(job.id)).toMatchObject({ locked_by: expect.stringMatching(/^pool-/), attempts: 1 });

    proxy.restore();
    const restoredAt = Date.now();
    const ended = await waitUntil(async () => {
      const status = await jobStatus(job.id);
      return status === 'running' || status === 'queued' ? undefined : status;
    }, endsWithinMs);
    expect(Date.now() - restoredAt).toBeLessThan(endsWithinMs);
    expect(ended).toBe('succeeded');
    // What an operator sees: the lane's runner started again, the lock it left released.
    expect(logged('a worker runner stopped on its own; starting it again')).toBe(true);
    expect(logged('released queue jobs this worker had locked but no longer runs')).toBe(true);
    // graphile-worker writes the queue job's completion after the task returns (batched, a tick later).
    await waitUntil(async () => ((await queueRow(job.id)) === null ? true : undefined), 10_000);
    expect(await holdStatus(job.hold_id!)).toBe('settled');
    expect((await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.reserved_minor).toBe(0);
    const costs = await meteredCosts(job.id);
    expect(costs).toHaveLength(1);
    expect(costs[0]).toBeGreaterThan(0);
    const messages = await t.http
      .get(api(`/tasks/${taskId}/messages`))
      .set(bearer(tenant.liveKey))
      .expect(200);
    expect(messages.body.data.at(-1)).toMatchObject({
      role: 'assistant',
      text: 'Answered on the second attempt.',
    });
  });
});
