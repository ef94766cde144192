import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Logger, run, type Runner } from 'graphile-worker';
import pg from 'pg';

import { mainRunnerPreset, sideRunnerPreset } from '../../../worker/runnerPresets.ts';
import { createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';

// A stop that arrives while a job runs (SIGTERM mid-job): the stop waits for the job, and what
// the job ended with must be written before the runner's pool ends. Otherwise the job stays
// locked, and the reaper later hands it to another worker, which runs it a second time.

let database: { name: string; url: string };
let client: pg.Client;

beforeAll(async () => {
  database = await createTestDatabase();
  client = new pg.Client({ connectionString: database.url });
  await client.connect();
});
afterAll(async () => {
  await client.end();
  await dropTestDatabase(database.name);
});

async function addJob(task: string): Promise<string> {
  const { rows } = await client.query<{ id: string }>(
    `select id::text from graphile_worker.add_job($1, '{}'::json, max_attempts => 5)`,
    [task],
  );
  return rows[0]!.id;
}

async function jobRow(id: string) {
  const { rows } = await client.query<{ locked_at: Date | null; last_error: string | null }>(
    `select locked_at, last_error from graphile_worker.jobs where id = $1`,
    [id],
  );
  return rows[0];
}

/** Runs one job whose task stops its own runner mid-job, then returns the job's row after the stop. */
async function stopDuringJob(preset: GraphileConfig.WorkerOptions, outcome: 'succeed' | 'fail') {
  const id = await addJob('stops_its_runner');
  let stopping!: Promise<void>;
  let runner!: Runner;
  const started = new Promise<void>((resolve, reject) => {
    void run({
      connectionString: database.url,
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 2000,
      logger: new Logger(() => () => {}),
      preset: { worker: preset },
      taskList: {
        stops_its_runner: async () => {
          stopping = runner.stop();
          resolve();
          // Let the stop reach the pool's shutdown before the job ends.
          await new Promise((r) => setImmediate(r));
          if (outcome === 'fail') throw new Error('provider said no');
        },
      },
    }).then((made) => (runner = made), reject);
  });
  await started;
  await stopping;
  return jobRow(id);
}

describe.each([
  ['main', mainRunnerPreset(1)],
  ['side (webhooks, ocr, video)', sideRunnerPreset],
])('a %s runner stopped while a job runs', (_name, preset) => {
  it('writes the job’s completion before its pool ends: the job is gone', async () => {
    expect(await stopDuringJob(preset, 'succeed')).toBeUndefined();
  });

  it('writes the job’s failure before its pool ends: unlocked, with its error, for a later retry', async () => {
    expect(await stopDuringJob(preset, 'fail')).toEqual({ locked_at: null, last_error: 'provider said no' });
  });
});
