import { EventEmitter } from 'node:events';

import { Logger, run, type Task, type TaskList, type WorkerEvents } from 'graphile-worker';
import pg from 'pg';

import { JobCreator } from '../../shared/jobs/createJob.ts';
import { fixtureProviders } from '../../shared/providers/fixtures.ts';
import { serverAndPostgresCpuMs } from './cpu.ts';
import { type BenchContext, type Platform } from './harness.ts';
import { median } from './stats.ts';

const jobsPerRound = 4000;
const rounds = 5;

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

type Round = {
  jobsPerSecond: number;
  serverMsPerJob: number;
  postgresMsPerJob: number;
  walBytesPerJob: number;
};

/** Where the server's write-ahead log ends, in bytes (one log for both databases). */
async function walPosition(url: string): Promise<number> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ b: string }>(`select pg_current_wal_lsn() - '0/0'::pg_lsn as b`);
    return Number(rows[0]!.b);
  });
}

type Start = { at: number; cpu: { server: number; postgres: number }; wal: number };

async function start(url: string): Promise<Start> {
  const wal = await walPosition(url);
  return { at: performance.now(), cpu: serverAndPostgresCpuMs(), wal };
}

async function measure(url: string, started: Start): Promise<Round> {
  const seconds = (performance.now() - started.at) / 1000;
  const after = serverAndPostgresCpuMs();
  return {
    jobsPerSecond: jobsPerRound / seconds,
    serverMsPerJob: (after.server - started.cpu.server) / jobsPerRound,
    postgresMsPerJob: (after.postgres - started.cpu.postgres) / jobsPerRound,
    // What the round's commits had to flush: the write-ahead log each job adds.
    walBytesPerJob: ((await walPosition(url)) - started.wal) / jobsPerRound,
  };
}

/**
 * One round of a plain graphile-worker runner, as the platform's worker runs its queue (same
 * concurrency, local queue and batched completion), over `jobsPerRound` jobs of its one task that
 * `addJobs` adds in one statement: jobs per second from their insert to the last completion.
 */
async function queueRound(
  databaseUrl: string,
  concurrency: number,
  taskList: TaskList,
  addJobs: (client: pg.Client) => Promise<unknown>,
): Promise<Round> {
  const events = new EventEmitter() as WorkerEvents;
  let completed = 0;
  let allDone!: () => void;
  const done = new Promise<void>((resolve) => (allDone = resolve));
  events.on('job:complete', () => {
    if (++completed === jobsPerRound) allDone();
  });
  const runner = await run({
    connectionString: databaseUrl,
    concurrency,
    noHandleSignals: true,
    pollInterval: 2000,
    events,
    logger: new Logger(() => () => {}),
    preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0 } },
    taskList,
  });
  try {
    const started = await start(databaseUrl);
    await withClient(databaseUrl, addJobs);
    await done;
    return await measure(databaseUrl, started);
  } finally {
    await runner.stop();
  }
}

/** Raw graphile-worker with a task that does nothing: what the queue itself costs per job. */
function rawRound(databaseUrl: string, concurrency: number): Promise<Round> {
  return queueRound(databaseUrl, concurrency, { bench_raw_noop: async () => {} }, (c) =>
    c.query(
      `select count(*) from graphile_worker.add_jobs((
         select array_agg(row('bench_raw_noop', '{}'::json, null, null, 3, null, 0, null)::graphile_worker.job_spec)
         from generate_series(1, $1)))`,
      [jobsPerRound],
    ),
  );
}

/**
 * The floor's task: the job's row, its finish and its metering record in one transaction of its own.
 * It writes what the platform's job writes for the same input: the fixture's embedding as the
 * result, the fixture's usage on the record.
 */
async function bookkeepingTask(tenant: Pick<Platform['tenant'], 'workspaceId' | 'projectId'>): Promise<Task> {
  const out = await fixtureProviders.embeddings.embed({ input: ['x'], signal: new AbortController().signal });
  const result = JSON.stringify({ embeddings: out.vectors, model: out.model, usage: out.usage });
  const usage = JSON.stringify(out.usage);
  return async (payload, helpers) => {
    const { jobId } = payload as { jobId: string };
    await helpers.withPgClient(async (client) => {
      await client.query('begin');
      try {
        await client.query(
          `insert into jobs (id, workspace_id, project_id, type, livemode, input)
           values ($1, $2, $3, 'embeddings.create', false, '{"input":["x"]}')`,
          [jobId, tenant.workspaceId, tenant.projectId],
        );
        await client.query(
          `update jobs set status = 'succeeded', result = $2, cost_minor = 0, completed_at = now() where id = $1`,
          [jobId, result],
        );
        await client.query(
          `insert into metering_records (id, job_id, workspace_id, project_id, operation, livemode, usage,
             cost_minor, currency)
           values ($1, $2, $3, $4, 'embeddings.create', false, $5, 0, 'USD')`,
          [`mtr_${jobId}`, jobId, tenant.workspaceId, tenant.projectId, usage],
        );
        await client.query('commit');
      } catch (error) {
        await client.query('rollback');
        throw error;
      }
    });
  };
}

/**
 * The floor the job engine is measured against: the same bookkeeping done the plain way, by a
 * graphile-worker task (bookkeepingTask) with graphile-worker's own pg client, built the obvious
 * way, not tuned. It runs on the platform's database, beside the idle platform worker.
 */
async function bookkeepingRound(
  databaseUrl: string,
  concurrency: number,
  tenant: Pick<Platform['tenant'], 'workspaceId' | 'projectId'>,
  round: number,
): Promise<Round> {
  const task = await bookkeepingTask(tenant);
  return queueRound(databaseUrl, concurrency, { bench_floor_bookkeeping: task }, (c) =>
    c.query(
      `select count(*) from graphile_worker.add_jobs((
         select array_agg(row('bench_floor_bookkeeping', json_build_object('jobId', $2 || i), null, null, 3,
                              null, 0, null)::graphile_worker.job_spec)
         from generate_series(1, $1) i))`,
      [jobsPerRound, `job_floor${round}_`],
    ),
  );
}

/**
 * The platform's worker pool (startWorker: the job engine, liveness, batched starts and finishes)
 * running jobs whose work is nothing to speak of: test-key embeddings of one short text (fixture
 * vectors), created as the api creates them (JobCreator, with its group commit), each still going
 * queued → succeeded with its metering record. Jobs per second from their creation to the last one
 * succeeded.
 */
async function platformRound(
  databaseUrl: string,
  platform: Pick<Platform, 'pool' | 'tenant'>,
  round: number,
): Promise<Round> {
  const prefix = `job_bench${round}_`;
  const creator = new JobCreator(platform.pool);
  const started = await start(databaseUrl);
  await Promise.all(
    Array.from({ length: jobsPerRound }, (_, i) =>
      creator.create(platform.pool, {
        id: `${prefix}${i}`,
        workspaceId: platform.tenant.workspaceId,
        projectId: platform.tenant.projectId,
        keyId: null,
        type: 'embeddings.create',
        livemode: false,
        input: { input: ['x'] },
        holdId: null,
        requestId: null,
      }),
    ),
  );
  await withClient(databaseUrl, async (c) => {
    for (;;) {
      const { rows } = await c.query<{ n: string }>(
        // The unfinished jobs' partial index keeps this read small while the worker runs.
        `select count(*) as n from jobs where completed_at is null and id like $1`,
        [`${prefix}%`],
      );
      if (Number(rows[0]!.n) === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  });
  return measure(databaseUrl, started);
}

async function vacuumQueues(databaseUrl: string): Promise<void> {
  await withClient(databaseUrl, async (c) => {
    const { rows } = await c.query<{ t: string }>(
      `select format('%I.%I', schemaname, relname) as t from pg_stat_user_tables
       where (schemaname, relname) in (('graphile_worker', '_private_jobs'), ('public', 'jobs'))`,
    );
    for (const { t } of rows) await c.query(`vacuum (analyze) ${t}`);
  });
}

/**
 * Job throughput of one worker process against the same bookkeeping done the plain way (target
 * ≥ 1.0× its jobs/s and at most its write-ahead log per job), with raw graphile-worker's no-op
 * figures beside them for information: what the job engine costs per job over the queue itself.
 */
export default async function jobsBench(ctx: BenchContext): Promise<void> {
  const platform = await ctx.startPlatform();
  const concurrency = platform.config.workerConcurrency;
  const raw: Round[] = [];
  const floor: Round[] = [];
  const ours: Round[] = [];
  try {
    // Warm-up (plans, statistics), then alternating rounds.
    await platformRound(ctx.databaseUrl, platform, 0);
    await ctx.analyze();
    for (let round = 1; round <= rounds; round++) {
      // Each round starts from tables autovacuum has caught up with (a round leaves thousands of
      // dead queue rows that the next one's fetches would otherwise wade through): rounds compare
      // the work per job, not which database happened to be vacuumed last.
      await vacuumQueues(ctx.floorDatabaseUrl);
      raw.push(await rawRound(ctx.floorDatabaseUrl, concurrency));
      await vacuumQueues(ctx.databaseUrl);
      floor.push(await bookkeepingRound(ctx.databaseUrl, concurrency, platform.tenant, round));
      await vacuumQueues(ctx.databaseUrl);
      ours.push(await platformRound(ctx.databaseUrl, platform, round));
    }
  } finally {
    await platform.stop();
  }
  const rate = (runs: Round[]) => median(runs.map((r) => r.jobsPerSecond));
  const cpu = (runs: Round[]) =>
    `${median(runs.map((r) => r.serverMsPerJob)).toFixed(2)} + ${median(runs.map((r) => r.postgresMsPerJob)).toFixed(2)} ms`;
  const wal = (runs: Round[]) =>
    `${Math.round(median(runs.map((r) => r.walBytesPerJob))).toLocaleString('en-US')} B`;
  const walOf = (runs: Round[]) => median(runs.map((r) => r.walBytesPerJob));
  const ratio = rate(ours) / rate(floor);
  const walWithin = walOf(ours) <= walOf(floor);
  const pass = ratio >= 1.0 && walWithin;
  ctx.report(`Job throughput of one worker process (${jobsPerRound} jobs, concurrency ${concurrency})`, {
    'bookkeeping floor, plain task (jobs/s)': Math.round(rate(floor)),
    'platform worker, job engine (jobs/s)': Math.round(rate(ours)),
    'raw graphile-worker, no-op task (jobs/s)': Math.round(rate(raw)),
    'CPU per job floor (event loop + PostgreSQL)': cpu(floor),
    'CPU per job platform (event loop + PostgreSQL)': cpu(ours),
    'CPU per job raw (event loop + PostgreSQL)': cpu(raw),
    'write-ahead log per job floor / platform / raw': `${wal(floor)} / ${wal(ours)} / ${wal(raw)}`,
    'ratio to raw graphile-worker (information)': (rate(ours) / rate(raw)).toFixed(2),
    'ratio to floor, WAL within floor (target ≥ 1.0)': `${ratio.toFixed(2)}, ${walWithin ? 'yes' : 'no'} ${pass ? 'PASS' : 'FAIL'}`,
  });
}
