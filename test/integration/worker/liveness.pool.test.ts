import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { findDeadLockHolders } from '../../../shared/db/queries/workerHeartbeats.ts';
import { sql } from '../../../shared/db/sql.ts';
import { staleAfterSeconds } from '../../../shared/queue/liveness.ts';
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

/** A job no worker here runs (unknown task), locked by `holder` as if queued locally for an hour. */
async function jobLockedBy(holder: string): Promise<void> {
  await t.deps.pool.query(sql.unsafe`select graphile_worker.add_job('liveness__probe_only', '{}'::json)`);
  await t.deps.pool.query(sql.typeAlias('void')`
    update graphile_worker._private_jobs j
    set locked_by = ${holder}, locked_at = now() - interval '1 hour'
    from graphile_worker._private_tasks k
    where k.id = j.task_id and k.identifier = 'liveness__probe_only' and j.locked_by is null
  `);
}

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
    const dead = await findDeadLockHolders(t.deps.pool, staleAfterSeconds);
    expect(dead).toContain('pool-gone');
    expect(dead).not.toContain(poolId);
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
