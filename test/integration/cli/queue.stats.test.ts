import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, run, type Runner } from 'graphile-worker';
import { z } from 'zod';

import { commands } from '../../../cli/admin.ts';
import type { Config } from '../../../shared/config/config.ts';
import { beatWorkers } from '../../../shared/db/queries/workerHeartbeats.ts';
import { sql } from '../../../shared/db/sql.ts';
import { admin } from '../../helpers/cli.ts';
import type { TestContext } from '../../helpers/context.ts';
import { contextForCli } from '../../helpers/tenantContext.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

let t: TestContext;
let env: Record<string, string>;

beforeAll(async () => {
  ({ t, env } = await contextForCli());
});
afterAll(() => t.close());

type LaneStats = {
  lane: string;
  queued: number;
  latencySeconds: number;
  running: number;
  workersAlive: number;
};

/** The command as the CLI runs it (the whole CLI, argument parsing and output, is run once, below). */
async function stats(
  values: Record<string, string> = {},
  config: Config = t.config,
): Promise<Record<string, LaneStats>> {
  const { lanes } = (await commands['queue stats']!.run(t.deps.pool, values, config)) as {
    lanes: LaneStats[];
  };
  return Object.fromEntries(lanes.map((lane) => [lane.lane, lane]));
}

/** Adds a job of `task` due `dueSecondsAgo` ago (negative: not due yet). */
function addJob(task: string, dueSecondsAgo: number) {
  return t.deps.pool.query(sql.typeAlias('void')`
    select from graphile_worker.add_job(${task}, '{}'::json,
      run_at => now() - make_interval(secs => ${dueSecondsAgo}))
  `);
}

/** webhook__deliver jobs in graphile-worker's table, done or not: a finished job's row is deleted. */
const deliveriesInQueue = () =>
  t.deps.pool.oneFirst(sql.type(z.object({ count: z.number() }))`
    select count(*)::int from graphile_worker.jobs where task_identifier = 'webhook__deliver'
  `);

describe('admin queue stats', () => {
  it('prints every lane at zero for an empty queue, as one JSON object on stdout', async () => {
    const result = await admin(['queue', 'stats'], env);
    expect(result).toMatchObject({ code: 0, stderr: null });
    const { lanes } = result.stdout as { lanes: LaneStats[] };
    expect(lanes.map((lane) => lane.lane)).toEqual(['main', 'webhooks', 'ocr', 'video']);
    for (const lane of lanes) {
      expect(lane).toEqual({ lane: lane.lane, queued: 0, latencySeconds: 0, running: 0, workersAlive: 0 });
    }
  });

  it('counts due jobs per lane with the oldest one’s age, running jobs and live worker processes', async () => {
    await addJob('text__generate', 30);
    await addJob('task__reply', 5);
    await addJob('text__generate', -3600); // not due yet: not waiting
    await addJob('ocr__extract', 12);
    await beatWorkers(t.deps.pool, ['wkr_a1', 'wkr_a2'], 'host-a:1');
    await beatWorkers(t.deps.pool, ['wkr_b1'], 'host-b:2');
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into worker_heartbeats (worker_id, process_label, last_seen_at)
      values ('wkr_dead', 'host-c:3', now() - make_interval(secs => ${t.config.workerStaleAfterMs / 1000 + 5}))
    `);
    // Dead by the configured WORKER_STALE_AFTER_MS, not by a fixed limit.
    const longer = { ...t.config, workerStaleAfterMs: t.config.workerStaleAfterMs + 60_000 };
    expect((await stats({}, longer)).main!.workersAlive).toBe(3);

    // A webhook delivery held by a runner until released: running, no longer waiting.
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    await addJob('webhook__deliver', 1);
    const runner: Runner = await run({
      connectionString: t.databaseUrl,
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 100,
      logger: new Logger(() => () => {}),
      taskList: {
        webhook__deliver: async () => {
          started();
          await released;
        },
      },
    });
    try {
      await running;
      const lanes = await stats();
      expect(lanes.main).toMatchObject({ queued: 2, running: 0, workersAlive: 2 });
      expect(lanes.main!.latencySeconds).toBeGreaterThanOrEqual(30);
      expect(lanes.main!.latencySeconds).toBeLessThan(30 + 60);
      expect(lanes.ocr).toMatchObject({ queued: 1, running: 0, workersAlive: 2 });
      expect(lanes.ocr!.latencySeconds).toBeGreaterThanOrEqual(12);
      expect(lanes.webhooks).toMatchObject({ queued: 0, latencySeconds: 0, running: 1, workersAlive: 2 });
      expect(lanes.video).toMatchObject({ queued: 0, latencySeconds: 0, running: 0, workersAlive: 2 });
      // Done: the delivery leaves the queue. Wait for the runner to write that while it still runs:
      // its stop() does not await a completion in flight, which could then be lost with its pool.
      release();
      await waitUntil(async () => ((await deliveriesInQueue()) === 0 ? true : undefined), 10_000, 20);
    } finally {
      release();
      await runner.stop();
    }
    expect((await stats()).webhooks).toMatchObject({ queued: 0, running: 0 });
    // One lane alone, as an autoscaler of that lane's dynos reads it.
    expect(Object.keys(await stats({ lane: 'ocr' }))).toEqual(['ocr']);
  });

  it('refuses a lane that does not exist', async () => {
    await expect(stats({ lane: 'gpu' })).rejects.toMatchObject({ code: 'invalid_arguments' });
  });
});
