import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { makePool } from '../../../shared/db/pool.ts';
import type { DatabasePool } from '../../../shared/db/sql.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import {
  checkBalance,
  checkCharges,
  checkFiles,
  describeKeys,
  describeUnfinished,
  isSettled,
  unfinished,
} from '../../helpers/faultInvariants.ts';
import { byStatus, type LoadReport, startLoad } from '../../helpers/faultLoad.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { quickFleetLivenessEnv } from '../../helpers/quickLiveness.ts';
import { type RestartablePostgres, startRestartablePostgres } from '../../helpers/restartablePostgres.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * Two web and two worker processes under a steady load of live text calls, tasks, messages and
 * uploads, while PostgreSQL restarts (fast shutdown: every session ended at once) or a worker is
 * killed. After each fault and the load's end: nothing stays queued, running, locked or held; every
 * call answered 201 was charged once; every file has its object; no answer was anything but the
 * API's envelope.
 */
// Four in CI (each costs ~12 s); the races a restart exposes were found with 10 to 30 (FAULT_RESTARTS).
const restarts = Number(process.env.FAULT_RESTARTS ?? 4);
const credits = 50_000_000;
// The bound: every job that was running ends within this after the load stops.
const settleWithinMs = 90_000;

let pg: RestartablePostgres;
let pool: DatabasePool;
let store: ObjectStore;
let mock: OpenAiMock;
let fleet: Fleet;
let tenant: Tenant;
const figures: string[] = [];

beforeAll(async () => {
  pg = await startRestartablePostgres();
  pool = await makePool(pg.url, { maxPoolSize: 2 });
  mock = await startOpenAiMock();
  // Each generation takes a few hundred milliseconds, so calls are in flight when the fault comes.
  mock.queueChat(...Array.from({ length: 50_000 }, () => ({ kind: 'ok' as const, delayMs: 30 })));
  const s3 = {
    endpoint: process.env.SVC_TEST_S3_ENDPOINT!,
    bucket: 'svc-faults',
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    region: 'us-east-1',
  };
  store = new ObjectStore(s3);
  await store.ensureBucket();
  tenant = await createTenant(pool, { credits, rateLimitPerMinute: 1_000_000 });
  fleet = await startFleet(
    {
      ...openaiEnv(mock),
      DATABASE_URL: pg.url,
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: s3.bucket,
      DATABASE_POOL_SIZE: '5',
      WORKER_CONCURRENCY: '4',
      LOG_LEVEL: 'info',
      BRAIN_SYNTHESIS_DEBOUNCE_MS: '0',
      // The killed worker's jobs are taken over sooner; a restart's silence stays under the limit.
      ...quickFleetLivenessEnv,
    },
    { webs: 2, workers: 2 },
  );
}, 180_000);

afterAll(async () => {
  // FAULT_LOGS=<dir>: every process's whole output there, to follow one job through the fleet.
  const logDir = process.env.FAULT_LOGS;
  if (logDir) {
    const processes = [...(fleet?.webs.map((w) => w.process) ?? []), ...(fleet?.workers ?? [])];
    processes.forEach((p, i) =>
      writeFileSync(path.join(logDir, `process-${i}-${p.child.pid}.log`), p.output()),
    );
  }
  await fleet?.stop();
  await pool?.end();
  await pg?.stop();
  await mock?.close();
  if (figures.length > 0) process.stderr.write(`fault figures:\n${figures.join('\n')}\n`);
});

const origins = () => fleet.webs.map((w) => w.origin);
const callsSoFar = (report: LoadReport) => report.calls.length;

/** Runs load until `during` has happened with calls on both sides of it; then checks everything. */
async function expectIntactAfter(label: string, during: () => Promise<void>) {
  const load = startLoad({ origins: origins(), liveKey: tenant.liveKey }, 6, label);
  await waitUntil(async () => (callsSoFar(load.report) >= 15 ? true : undefined), 60_000);
  const faultAt = Date.now();
  await during();
  const resumed = callsSoFar(load.report);
  await waitUntil(async () => (callsSoFar(load.report) >= resumed + 15 ? true : undefined), 90_000).catch(
    async (error: unknown) => {
      throw new Error(
        `${String(error)} after the fault; unfinished: ${JSON.stringify(await describeUnfinished(pool, tenant.workspaceId))}`,
      );
    },
  );
  const report = await load.stop();
  const stoppedAt = Date.now();
  const settled = await waitUntil(
    async () => {
      const u = await unfinished(pool, tenant.workspaceId).catch(() => undefined);
      return u && isSettled(u) ? u : undefined;
    },
    settleWithinMs,
    250,
  ).catch(async () => ({ stuck: await unfinished(pool, tenant.workspaceId) }));
  if ('stuck' in settled) {
    throw new Error(
      `not settled: ${JSON.stringify(settled)}; ${JSON.stringify(await describeUnfinished(pool, tenant.workspaceId))}`,
    );
  }
  const charges = await checkCharges(pool, tenant.workspaceId, report.calls);
  const files = await checkFiles(pool, store, tenant.workspaceId, report.calls);
  const balance = await checkBalance(pool, tenant.workspaceId, credits);
  figures.push(
    `${label}: ${report.calls.length} calls, final ${JSON.stringify(byStatus(report.calls))}, ` +
      `attempts ${JSON.stringify(byStatus(report.calls.flatMap((c) => c.statuses.map((s) => ({ ...c, final: s })))))}, ` +
      `hangs ${report.hangs.length}, network errors ${report.networkErrors}, text 201 ${charges.answered201} / charged ${charges.charged}, ` +
      `uploads 201 ${files.answered201} / files ${files.files}, settled ${Date.now() - stoppedAt} ms after the load (fault ${stoppedAt - faultAt} ms before)`,
  );
  expect(report.nonEnvelope).toEqual([]);
  if (report.hangs.length > 0) {
    const keys = await describeKeys(
      pool,
      report.hangs.map((h) => h.tag),
    );
    throw new Error(`no answer within 30 s: ${JSON.stringify(report.hangs)}; ${JSON.stringify(keys)}`);
  }
  expect(charges.problems).toEqual([]);
  expect(files.problems).toEqual([]);
  expect(balance.balance).toBe(balance.expected);
  // Every call ended answered as it should be in the end: the client's retries outlast the fault.
  expect(report.calls.filter((c) => ![201, 202].includes(c.final))).toEqual([]);
  for (const p of [...fleet.webs.map((w) => w.process), ...fleet.workers]) {
    // A process that ended says why in its last lines.
    const ended = p.child.exitCode === null ? null : { exitCode: p.child.exitCode, last: p.output().slice(-3000) };
    expect(ended).toBeNull();
  }
}

describe('faults under load on 2 web + 2 worker processes', () => {
  it(
    `PostgreSQL restarts (fast) ${restarts} times in a row: nothing lost, stuck or charged twice`,
    async () => {
      for (let i = 1; i <= restarts; i++) await expectIntactAfter(`restart ${i}`, () => pg.restart());
    },
    60_000 + restarts * 150_000,
  );

  it('a worker killed (SIGKILL) with billed jobs in flight: its jobs run again elsewhere, billed once', async () => {
    await expectIntactAfter('worker killed', async () => {
      const doomed = fleet.workers.shift()!;
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      await fleet.addWorker();
    });
  }, 240_000);
});
