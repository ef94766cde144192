import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findDeadLockHolders } from '../../../shared/db/queries/workerHeartbeats.ts';
import { sql } from '../../../shared/db/sql.ts';
import type { WorkerHandle } from '../../../worker/startWorker.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * The production worker fetches jobs into a local queue, locked in its pool's name rather than a
 * worker's. A job can wait there longer than the staleness limit under a backlog: the reaper must
 * take the pool for alive while its process is, and for dead once it stops beating.
 */
let t: TestContext;
let worker: WorkerHandle;

beforeAll(async () => {
  t = await setupTestContext();
  worker = await t.startWorker();
});
afterAll(async () => {
  await t.close();
});

const heartbeatIds = () =>
  t.deps.pool.anyFirst(sql.type(z.object({ worker_id: z.string() }))`
    select worker_id from worker_heartbeats order by worker_id
  `);

/** A job no worker here runs (unknown task), locked by `holder` `ago` (as if queued locally that long). */
async function jobLockedBy(holder: string, task = 'liveness__probe_only', ago = '1 hour'): Promise<string> {
  const id = await t.deps.pool.oneFirst(sql.unsafe`
    select (graphile_worker.add_job(${task}, '{}'::json)).id::text as id
  `);
  await t.deps.pool.query(sql.unsafe`
    update graphile_worker._private_jobs
    set locked_by = ${holder}, locked_at = now() - ${ago}::interval
    where id = ${id as string}::bigint
  `);
  return id as string;
}

const lockOf = (id: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ locked_by: z.string().nullable() }))`
    select locked_by from graphile_worker.jobs where id = ${id}::bigint
  `);

describe('worker liveness with a local queue', () => {
  it("beats for the worker pool, so jobs locked in the pool's name are not reaped while it lives", async () => {
    let ids: readonly string[] = [];
    for (let i = 0; i < 100 && !ids.some((id) => id.startsWith('pool-')); i++) {
      await new Promise((r) => setTimeout(r, 50));
      ids = await heartbeatIds();
    }
    const poolId = ids.find((id) => id.startsWith('pool-'));
    expect(poolId).toBeDefined();
    expect(ids.some((id) => id.startsWith('worker-'))).toBe(true);

    await jobLockedBy(poolId!);
    await jobLockedBy('pool-gone');
    const dead = await findDeadLockHolders(t.deps.pool, t.config.workerStaleAfterMs / 1000);
    expect(dead).toContain('pool-gone');
    expect(dead).not.toContain(poolId);
  });

  it("releases a job locked in a live pool's name that the pool does not hold, at the second pass that finds it", async () => {
    // What a fetch whose answer was lost with its connection leaves: locked by a live pool that never got it.
    const poolId = (await heartbeatIds()).find((id) => id.startsWith('pool-'))!;
    const orphan = await jobLockedBy(poolId, 'liveness__orphan', '0 seconds');
    const lockedAt = Date.now();
    await waitUntil(async () => ((await lockOf(orphan)) === null ? true : undefined), 20_000);
    // Not at the first pass (every 5 s): a job on its way from the local queue to a worker is unheld for a tick.
    expect(Date.now() - lockedAt).toBeGreaterThanOrEqual(5_000);
  });

  it('beats for every runner of the process (main, webhooks, OCR, video): their pools and each of their workers', async () => {
    // Every runner locks its jobs in its pool's name: a runner that did not beat would have its
    // running jobs (a webhook delivery, an OCR read) released by another process's reaper.
    const { workerConcurrency, webhookConcurrency, ocrEngines, videoConcurrency } = t.config;
    expect(Object.keys(worker.runners).sort()).toEqual(['main', 'ocr', 'video', 'webhooks']);
    const counts = await waitUntil(async () => {
      const ids = await heartbeatIds();
      const pools = ids.filter((id) => id.startsWith('pool-')).length;
      const workers = ids.filter((id) => id.startsWith('worker-')).length;
      return pools === 4 && workers === workerConcurrency + webhookConcurrency + ocrEngines + videoConcurrency
        ? { pools, workers }
        : undefined;
    });
    expect(counts).toEqual({ pools: 4, workers: 16 + 8 + 2 + 2 });
  });
});
