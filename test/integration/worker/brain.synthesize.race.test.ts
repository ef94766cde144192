import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runOnce } from 'graphile-worker';
import pg from 'pg';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { enqueue } from '../../../shared/queue/enqueue.ts';
import type { WorkerContext } from '../../../worker/context.ts';
import { graphileLogger } from '../../../worker/graphileLogger.ts';
import { brainSynthesize } from '../../../worker/tasks/brain__synthesize.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitForLockWaiters } from '../../helpers/locks.ts';
import { capturingLogger, errorLines } from '../../helpers/logCapture.ts';
import { workerContextFor } from '../../helpers/workerContext.ts';
import { finishedTask } from './brain.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let ctx: WorkerContext;
const tasks = { supplier: '', rotaA: '', rotaB: '' };

beforeAll(async () => {
  // The keyed synthesis each reply schedules stays an hour away, and the worker that answers the
  // tasks is stopped before the tests: the only syntheses that run are the ones each test starts.
  t = await setupTestContext({ BRAIN_SYNTHESIS_DEBOUNCE_MS: String(3_600_000) });
  tenant = await createTenant(t.deps.pool);
  const worker = await t.startWorker();
  tasks.supplier = await finishedTask(
    t,
    tenant.testKey,
    'Pokhara supplier review',
    'Review the Pokhara suppliers. Two of them delivered late twice this quarter.',
  );
  tasks.rotaA = await finishedTask(
    t,
    tenant.testKey,
    'Monsoon rota',
    'Who covers the Butwal office in the monsoon?',
  );
  tasks.rotaB = await finishedTask(
    t,
    tenant.testKey,
    'Monsoon rota',
    'Plan the monsoon rota for the Dharan team.',
  );
  await worker.stop();
  ctx = workerContextFor(t);
});
afterAll(async () => {
  await ctx.close();
  await t.close();
});

const pageRow = z.object({
  source_task_id: z.string().nullable(),
  slug: z.string(),
  title: z.string(),
  revision: z.number(),
  synthesized_through_seq: z.number().nullable(),
  last_message_seq: z.number().nullable(),
});

const pagesOf = (taskIds: string[]) =>
  t.deps.pool.any(sql.type(pageRow)`
    select p.source_task_id, p.slug, p.title, p.revision, p.synthesized_through_seq, t.last_message_seq
    from brain_pages p left join tasks t on t.id = p.source_task_id
    where p.source_task_id = any(${sql.array(taskIds, 'text')})
    order by p.slug
  `);

/** The errors of the syntheses of these tasks that failed (a failed job stays queued for its retry). */
const failedSyntheses = (taskIds: string[]) =>
  t.deps.pool.anyFirst(sql.type(z.object({ last_error: z.string().nullable() }))`
    select j.last_error from graphile_worker._private_jobs j
    join graphile_worker._private_tasks k on k.id = j.task_id
    where k.identifier = 'brain__synthesize' and j.payload->>'taskId' = any(${sql.array(taskIds, 'text')})
      and j.last_error is not null
  `);

/**
 * One synthesis job per entry of `taskIds`, each run by a graphile-worker runner of its own (two
 * workers), forced to overlap: the test holds open a transaction that inserted a page with `slug`,
 * the slug every synthesis computes. Each synthesis reaches its page write and queues behind that
 * row (or behind the synthesis ahead of it) with its conflict checks already passed; the rollback
 * then releases them all at once. Returns the log lines of both runners.
 */
async function overlappingSyntheses(taskIds: string[], slug: string): Promise<string[]> {
  const { logger, lines } = capturingLogger({ level: 'info' });
  const barrier = new pg.Client({ connectionString: t.databaseUrl });
  await barrier.connect();
  try {
    await barrier.query('begin');
    await barrier.query(
      `insert into brain_pages (id, workspace_id, slug, title, body) values ($1, $2, $3, 'Held', 'Rolled back.')`,
      [newId('page'), tenant.workspaceId, slug],
    );
    for (const taskId of taskIds) await enqueue(t.deps.pool, 'brain__synthesize', { taskId });
    const runs = taskIds.map(() =>
      runOnce({
        connectionString: t.databaseUrl,
        taskList: { brain__synthesize: brainSynthesize(ctx) },
        logger: graphileLogger(logger),
        concurrency: 1,
      }),
    );
    await waitForLockWaiters(t.deps.pool, taskIds.length);
    await barrier.query('rollback');
    await Promise.all(runs);
  } finally {
    await barrier.end();
  }
  return lines;
}

describe('brain__synthesize on two workers at once', () => {
  it('two syntheses of the same task: one page, one winner, no error', async () => {
    const taskId = tasks.supplier;
    const lines = await overlappingSyntheses([taskId, taskId], 'pokhara-supplier-review');
    expect(errorLines(lines).map((line) => line.msg)).toEqual([]);
    expect(await failedSyntheses([taskId])).toEqual([]);
    const pages = await pagesOf([taskId]);
    expect(pages).toHaveLength(1);
    expect(pages[0]).toMatchObject({
      slug: 'pokhara-supplier-review',
      title: 'Pokhara supplier review',
      revision: 1,
    });
    expect(pages[0]!.synthesized_through_seq).toBe(pages[0]!.last_message_seq);
  });

  it('two tasks with the same title synthesised at once get the slug and the next free one', async () => {
    const [a, b] = [tasks.rotaA, tasks.rotaB];
    const lines = await overlappingSyntheses([a, b], 'monsoon-rota');
    expect(errorLines(lines).map((line) => line.msg)).toEqual([]);
    expect(await failedSyntheses([a, b])).toEqual([]);
    const pages = await pagesOf([a, b]);
    expect(pages.map((p) => p.slug)).toEqual(['monsoon-rota', 'monsoon-rota-2']);
    expect(new Set(pages.map((p) => p.source_task_id))).toEqual(new Set([a, b]));
    for (const page of pages) expect(page.synthesized_through_seq).toBe(page.last_message_seq);
  });
});
