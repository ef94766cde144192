import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { finishJob, insertJob } from '../../../shared/db/queries/jobs.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { type TestContext } from '../../helpers/context.ts';
import { adminQuery } from '../../helpers/database.ts';
import { type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

const queuedJob = () =>
  insertJob(t.deps.pool, {
    id: newId('job'),
    workspaceId: tenant.workspaceId,
    projectId: tenant.projectId,
    keyId: null,
    type: 'text.generate',
    livemode: false,
    input: {},
    holdId: null,
    requestId: null,
  });

const finish = (id: string) =>
  t.deps.pool.transaction((tx) =>
    finishJob(tx, id, { status: 'succeeded', result: { text: 'ok' }, error: null, costMinor: 0 }),
  );

/** A waiter on a new job is woken within a second of the job finishing 50 ms later elsewhere. */
async function expectWokenByNotify() {
  const job = await queuedJob();
  const started = Date.now();
  const waiting = t.deps.jobWaiter.wait(job.id, { timeoutMs: 10_000 });
  setTimeout(() => void finish(job.id), 50);
  expect((await waiting).status).toBe('succeeded');
  expect(Date.now() - started).toBeLessThan(1000);
}

describe('notification hub', () => {
  it('wakes a waiter at once through NOTIFY', async () => {
    await expectWokenByNotify();
  });

  it('survives pg_terminate_backend of its LISTEN connection while a request waits', async () => {
    const job = await queuedJob();
    const oldPid = t.deps.hub.backendPid;
    expect(oldPid).toEqual(expect.any(Number));
    const started = Date.now();
    const waiting = t.deps.jobWaiter.wait(job.id, { timeoutMs: 15_000 });
    await adminQuery('select pg_terminate_backend($1)', [oldPid]);
    // The job finishes while the listener is down: the NOTIFY is lost, the re-read after reconnect is not.
    await finish(job.id);
    expect((await waiting).status).toBe('succeeded');
    // Well under the 5 s safety poll: the reconnect itself re-read the job.
    expect(Date.now() - started).toBeLessThan(3000);
    expect(t.deps.hub.backendPid).toEqual(expect.any(Number));
    expect(t.deps.hub.backendPid).not.toBe(oldPid);

    // Notifications flow again on the new connection.
    await expectWokenByNotify();
  });

  it('times out with internal_error rather than hanging', async () => {
    const job = await queuedJob();
    await expect(t.deps.jobWaiter.wait(job.id, { timeoutMs: 300 })).rejects.toMatchObject({
      code: 'internal_error',
    });
  });
});
