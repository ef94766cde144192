import { type ChildProcess, spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { run, type Runner, type WorkerEvents } from 'graphile-worker';
import { z } from 'zod';

import { reserveCredits } from '../../../shared/billing/metering.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createJob } from '../../../shared/jobs/createJob.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { graphileLogger } from '../../../worker/graphileLogger.ts';
import { startLiveness } from '../../../worker/liveness.ts';
import type { TestContext } from '../../helpers/context.ts';
import { principalFor, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { runWork, workerContextFor } from '../../helpers/workerContext.ts';

const helperPath = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../helpers/crashableWorker.ts',
);

let t: TestContext;
let tenant: Tenant;
const children: ChildProcess[] = [];

beforeAll(async () => ({ t, tenant } = await contextWithTenant({ credits: 500 })));
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await t.close();
});

function spawnWorker(workMs?: number): {
  child: ChildProcess;
  lines: string[];
  waitFor(prefix: string): Promise<string>;
} {
  const args = [helperPath, ...(workMs === undefined ? [] : [String(workMs)])];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      LOG_LEVEL: 'silent',
      NODE_ENV: 'test',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  const lines: string[] = [];
  const emitter = new EventEmitter();
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n').filter(Boolean)) {
      lines.push(line);
      emitter.emit('line', line);
    }
  });
  const waitFor = (prefix: string) =>
    new Promise<string>((resolve, reject) => {
      const found = lines.find((l) => l.startsWith(prefix));
      if (found) return resolve(found);
      const timer = setTimeout(
        () => reject(new Error(`worker never printed ${prefix}; got ${lines.join('|')}`)),
        30_000,
      );
      emitter.on('line', (line: string) => {
        if (line.startsWith(prefix)) {
          clearTimeout(timer);
          resolve(line);
        }
      });
    });
  return { child, lines, waitFor };
}

async function billedDeckJob(): Promise<string> {
  const key = await tenant.key({ monthlySpendCapMinor: 1000 });
  const principal = await principalFor(t.deps.pool, key.secret);
  return t.deps.pool.transaction(async (tx) => {
    const hold = await reserveCredits(tx, {
      principal,
      projectId: tenant.projectId,
      operation: 'deck.export',
      maxCostMinor: 20,
      requestId: 'req_crash',
    });
    const job = await createJob(tx, {
      type: 'deck.export',
      workspaceId: tenant.workspaceId,
      projectId: tenant.projectId,
      keyId: key.id,
      livemode: true,
      input: {},
      holdId: hold!.holdId,
      requestId: 'req_crash',
    });
    return job.id;
  });
}

const jobStatus = (id: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ status: z.string() }))`select status from jobs where id = ${id}`);

describe('worker liveness', () => {
  it('retries the job of a SIGKILLed worker within 60 s and settles it exactly once', async () => {
    const jobId = await billedDeckJob();
    const doomed = spawnWorker();
    await doomed.waitFor(`working ${jobId}`);
    expect(await jobStatus(jobId)).toBe('running');
    doomed.child.kill('SIGKILL');
    const killedAt = Date.now();

    // A healthy worker, with the production liveness (heartbeat + reaper) beside it.
    const ctx = workerContextFor(t);
    const events = new EventEmitter() as WorkerEvents;
    const liveness = startLiveness(ctx, events, 'healthy');
    let runs = 0;
    const runner: Runner = await run({
      connectionString: t.databaseUrl,
      events,
      noHandleSignals: true,
      concurrency: 1,
      pollInterval: 500,
      logger: graphileLogger(createLogger('silent', 'healthy')),
      taskList: {
        deck__export: (payload, helpers) =>
          runWork(ctx, payload, helpers, async () => {
            runs++;
            return { result: { by: 'healthy' }, usage: { pages: 1 }, costMinor: 7 };
          }),
      },
    });
    try {
      while ((await jobStatus(jobId)) !== 'succeeded') {
        expect(Date.now() - killedAt).toBeLessThan(60_000);
        await new Promise((r) => setTimeout(r, 250));
      }
      const recoveredIn = Date.now() - killedAt;
      expect(recoveredIn).toBeLessThan(60_000);
      expect(runs).toBe(1);
      const records = await t.deps.pool.any(sql.type(z.object({ cost_minor: z.number() }))`
        select cost_minor from metering_records where job_id = ${jobId}
      `);
      expect(records).toEqual([{ cost_minor: 7 }]);
      expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
        balance_minor: 493,
        reserved_minor: 0,
      });
    } finally {
      await runner.stop();
      await liveness.stop();
    }
  });

  it('drains on SIGTERM: the running job finishes before the process exits', async () => {
    const jobId = await billedDeckJob();
    const worker = spawnWorker(1500);
    await worker.waitFor(`working ${jobId}`);
    const exited = new Promise<number | null>((resolve) =>
      worker.child.once('exit', (code) => resolve(code)),
    );
    worker.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(worker.lines).toContain('drained');
    expect(await jobStatus(jobId)).toBe('succeeded');
  });
});
