import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findJob } from '../../../shared/db/queries/jobs.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { postAs, setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { jobOfRequest } from '../../helpers/jobs.ts';
import { mockReply, openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { quickLivenessEnv } from '../../helpers/quickLiveness.ts';

const workerMain = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../worker/main.ts');

let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let child: ChildProcess | undefined;

beforeAll(async () => {
  mock = await startOpenAiMock();
  const env = { ...openaiEnv(mock), ...quickLivenessEnv };
  t = await setupTestContext(env);
  tenant = await createTenant(t.deps.pool, { credits: 50_000 });
  // The production worker entry point, as its own process (`npm run start:worker`).
  child = spawn(process.execPath, [workerMain], {
    env: {
      ...process.env,
      ...env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      WORKER_CONCURRENCY: '1',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
});
afterAll(async () => {
  child?.kill('SIGKILL');
  await t.close();
  await mock.close();
});

describe('a worker killed mid-generation', () => {
  it('is retried by another worker and the call is settled exactly once', async () => {
    mock.queueChat({ kind: 'hang', words: 2 });
    const reached = mock.nextRequest('/chat/completions');
    const before = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    const response = postAs(t.http, tenant.liveKey, '/text')
      .set('x-request-id', 'req_crash_text')
      .send({ prompt: 'survive a crash' });
    const pending = response.then((res) => res);
    // The child worker holds the provider call open: kill it there, with no chance to clean up.
    const firstCall = await reached;
    const job = await jobOfRequest(t.deps.pool, 'req_crash_text');
    // Unfinished, and not marked running: a synchronous job's start writes nothing (see marksRunning).
    expect(job.status).toBe('queued');
    child!.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    await firstCall.closed;

    // A healthy worker reaps the dead one's lock (after WORKER_STALE_AFTER_MS of silence) and runs the job again.
    await t.startWorker();
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      text: mockReply('survive a crash'),
      model: 'gpt-4o-mini',
      cost: { amount: 1, currency: 'USD' },
    });

    const chatCalls = mock.requests.filter(
      (r) => r.path === '/chat/completions' && JSON.stringify(r.json).includes('survive a crash'),
    );
    expect(chatCalls).toHaveLength(2);
    const finished = await findJob(t.deps.pool, job.id);
    expect(finished).toMatchObject({ status: 'succeeded', cost_minor: 1 });
    const records = await t.deps.pool.any(sql.type(z.object({ cost_minor: z.number() }))`
      select cost_minor from metering_records where job_id = ${job.id}
    `);
    expect(records).toEqual([{ cost_minor: 1 }]);
    const hold = await t.deps.pool.one(
      sql.type(
        z.object({ status: z.string() }),
      )`select status from credit_holds where id = ${finished!.hold_id!}`,
    );
    expect(hold.status).toBe('settled');
    const after = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(after).toMatchObject({ balance_minor: before.balance_minor - 1, reserved_minor: 0 });
  }, 90_000);
});
