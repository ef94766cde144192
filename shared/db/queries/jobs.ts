import type { ValueExpression } from 'slonik';
import { z } from 'zod';

import { columnsOf, type Db, isoTimestamp, jsonText, noRows, sql } from '../sql.ts';
import { workspaceRecord } from './workspaceRows.ts';

export const jobStatus = z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof jobStatus>;

const jobRow = workspaceRecord.extend({
  project_id: z.string().nullable(),
  key_id: z.string().nullable(),
  type: z.string(),
  status: jobStatus,
  livemode: z.boolean(),
  input: z.record(z.string(), z.unknown()),
  result: z.unknown(),
  error: z.unknown(),
  hold_id: z.string().nullable(),
  cost_minor: z.number().nullable(),
  request_id: z.string().nullable(),
  cancel_requested_at: isoTimestamp.nullable(),
  created_at: isoTimestamp,
  started_at: isoTimestamp.nullable(),
  completed_at: isoTimestamp.nullable(),
});
export type JobRow = z.infer<typeof jobRow>;

/**
 * Makes the statement's own (implicit) transaction commit without waiting for the WAL flush: the
 * setting is local to that transaction and still in force when it commits. Only for writes whose
 * loss in a database crash is harmless (a re-run job, a result the purge removes later).
 */
const asyncCommit = sql.fragment`(select set_config('synchronous_commit', 'off', true))`;

/** What stays of a delivered job's input: only the key of its upload, which the worker still deletes. */
const keptInput = (input: ValueExpression) =>
  sql.fragment`(case when ${input} ? 'objectKey' then jsonb_build_object('objectKey', ${input} -> 'objectKey') else '{}'::jsonb end)`;

const columns = columnsOf(jobRow);
// Built once: the statements that read a job through a join or a CTE run for every job a worker takes.
const joinedColumns = columnsOf(jobRow, 'j');
const oldColumns = columnsOf(jobRow, 'old');

export type NewJob = {
  id: string;
  workspaceId: string;
  projectId: string | null;
  keyId: string | null;
  /** The OAuth app acting through an access token (metering attributes the call to it). */
  oauthAppId?: string | null;
  type: string;
  livemode: boolean;
  input: Record<string, unknown>;
  holdId: string | null;
  requestId: string | null;
};

export function insertJob(db: Db, job: NewJob) {
  return db.one(sql.type(jobRow)`
    insert into jobs (id, workspace_id, project_id, key_id, oauth_app_id, type, livemode, input, hold_id, request_id)
    values (${job.id}, ${job.workspaceId}, ${job.projectId}, ${job.keyId}, ${job.oauthAppId ?? null}, ${job.type},
            ${job.livemode}, ${sql.jsonb(job.input as never)}, ${job.holdId}, ${job.requestId})
    returning ${columns}
  `);
}

/**
 * Inserts the job row and adds its graphile-worker job in one statement: atomic without an explicit
 * transaction, and one round trip on the hot path of every queued endpoint.
 */
export function insertJobAndEnqueue(
  db: Db,
  job: NewJob,
  task: {
    identifier: string;
    payload: Record<string, unknown>;
    maxAttempts: number;
    priority: number;
  },
) {
  // Prepared: planning this CTE costs more than running it. The row records its queue job (see
  // findAbandonedJobs).
  return db.one(sql.prepared('jobs_insert_enqueue', jobRow)`
    with queued as (
      select (graphile_worker.add_job(
        ${task.identifier}, ${sql.json(task.payload as never)},
        max_attempts => ${task.maxAttempts}, priority => ${task.priority}
      )).id
    ), j as (
      insert into jobs (id, workspace_id, project_id, key_id, oauth_app_id, type, livemode, input, hold_id,
                        request_id, queue_job_id)
      select ${job.id}, ${job.workspaceId}, ${job.projectId}, ${job.keyId}, ${job.oauthAppId ?? null}, ${job.type},
             ${job.livemode}, ${sql.jsonb(job.input as never)}, ${job.holdId}, ${job.requestId}, queued.id
      from queued
      returning ${columns}
    )
    select * from j
  `);
}

/** Where a task reply waits its turn: the task, and the number of the message it answers. */
export type ReplyTurn = { taskId: string; messageSeq: number };

/**
 * Inserts a task reply's job row and puts it in its task's reply queue, in one statement. Its queue
 * job is added now if no earlier reply of the task is unfinished, otherwise in the transaction that
 * ends the reply before it (migration 000016's triggers). The caller must hold the task row's lock
 * (appending the message took it), so the turn's number is also the order replies are dispatched in.
 */
export function insertTaskReplyJob(
  db: Db,
  job: NewJob,
  turn: ReplyTurn,
  task: { identifier: string; payload: Record<string, unknown>; maxAttempts: number; priority: number },
) {
  return db.one(sql.type(jobRow)`
    with j as (
      insert into jobs (id, workspace_id, project_id, key_id, oauth_app_id, type, livemode, input, hold_id,
                        request_id)
      values (${job.id}, ${job.workspaceId}, ${job.projectId}, ${job.keyId}, ${job.oauthAppId ?? null}, ${job.type},
              ${job.livemode}, ${sql.jsonb(job.input as never)}, ${job.holdId}, ${job.requestId})
      returning ${columns}
    ), queued as (
      insert into task_reply_queue (task_id, message_seq, job_id, task_identifier, payload, max_attempts, priority)
      select ${turn.taskId}, ${turn.messageSeq}, j.id, ${task.identifier}, ${sql.json(task.payload as never)},
             ${task.maxAttempts}, ${task.priority}
      from j
      returning job_id
    )
    select j.* from j join queued on queued.job_id = j.id
  `);
}

/** An inline job (see shared/jobs/createJob.ts) with the graphile-worker task that runs it. */
export type NewInlineJob = Omit<NewJob, 'livemode' | 'holdId'> & {
  task: string;
  payload: Record<string, unknown>;
  maxAttempts: number;
  priority: number;
};

const insertedRow = jobRow.pick({ id: true, input: true, created_at: true });

/**
 * Inserts inline jobs and adds their graphile-worker jobs, any number in one statement (the api
 * batches concurrent calls), committed asynchronously: the worker's durable completion flushes it.
 * Each row keeps only what the upload sweep needs of its input. Rows come back in input order, as
 * inserted (only the id, the kept input and the creation time are read back: the rest is what was given).
 */
export async function insertInlineJobs(db: Db, jobs: NewInlineJob[]): Promise<JobRow[]> {
  const given = jobs.map((j) => ({
    id: j.id,
    workspace_id: j.workspaceId,
    project_id: j.projectId,
    key_id: j.keyId,
    type: j.type,
    input: j.input,
    request_id: j.requestId,
    task: j.task,
    // As text: through jsonb it would come back with a space after every colon and comma, bytes
    // the queue writes to the write-ahead log twice per job (added, then locked).
    payload: JSON.stringify(j.payload),
    max_attempts: j.maxAttempts,
    priority: j.priority,
  }));
  const rows = await db.any(sql.prepared('jobs_insert_inline', insertedRow)`
    with given as (
      select * from jsonb_to_recordset(${jsonText(given)}::jsonb) as t(
        id text, workspace_id text, project_id text, key_id text, type text, input jsonb, request_id text,
        task text, payload text, max_attempts smallint, priority smallint)
    ), queued as (
      -- add_jobs would plan its inner statements anew on every call (their plans do not depend on
      -- the values, yet PL/pgSQL keeps choosing custom plans), which costs more than all the rest
      -- of this statement. The setting is taken before add_jobs runs (it is part of its argument)
      -- and lasts only for this statement's own transaction.
      select q.id, q.payload ->> 'jobId' as job_id from graphile_worker.add_jobs((
        select array_agg(row(task, payload::json, null, null, max_attempts, null, priority, null)::graphile_worker.job_spec)
        from given
        where set_config('plan_cache_mode', 'force_generic_plan', true) is not null
      )) q
    ), j as (
      insert into jobs (id, workspace_id, project_id, key_id, type, livemode, input, hold_id, request_id,
                        queue_job_id)
      select g.id, g.workspace_id, g.project_id, g.key_id, g.type, false,
             ${keptInput(sql.identifier(['g', 'input']))}, null, g.request_id, queued.id
      from given g join queued on queued.job_id = g.id
      returning id, input, created_at
    )
    select j.* from j, ${asyncCommit} as durability
  `);
  const inserted = new Map(rows.map((r) => [r.id, r]));
  return jobs.map((j): JobRow => {
    const row = inserted.get(j.id);
    if (row === undefined) throw new Error(`inline job ${j.id} was not inserted`);
    return {
      id: j.id,
      workspace_id: j.workspaceId,
      project_id: j.projectId,
      key_id: j.keyId,
      type: j.type,
      status: 'queued',
      livemode: false,
      input: row.input,
      result: null,
      error: null,
      hold_id: null,
      cost_minor: null,
      request_id: j.requestId,
      cancel_requested_at: null,
      created_at: row.created_at,
      started_at: null,
      completed_at: null,
    };
  });
}

export function findJob(db: Db, jobId: string) {
  return db.maybeOne(sql.type(jobRow)`select ${columns} from jobs where id = ${jobId}`);
}

export function findWorkspaceJob(db: Db, workspaceId: string, jobId: string) {
  return db.maybeOne(sql.type(jobRow)`
    select ${columns} from jobs where id = ${jobId} and workspace_id = ${workspaceId}
  `);
}

export function lockJob(db: Db, jobId: string) {
  return db.maybeOne(
    sql.prepared('jobs_lock', jobRow)`select ${columns} from jobs where id = ${jobId} for no key update`,
  );
}

const runningJobRow = jobRow.extend({ currency: z.string() });

export type RunningJobRow = z.infer<typeof runningJobRow>;

/**
 * queued (or running again after a crash) → running, any number of jobs in one statement (workers
 * batch concurrent starts); a job that already finished is not returned. Rows come with the
 * workspace currency, which settlement needs. Committed asynchronously: if a database crash loses
 * the mark, the job simply runs from queued again.
 */
export async function markJobsRunning(db: Db, jobIds: string[]): Promise<(RunningJobRow | null)[]> {
  // Prepared: the statement never varies, only its id list.
  const rows = await db.any(sql.prepared('jobs_mark_running', runningJobRow)`
    update jobs j set status = 'running', started_at = coalesce(started_at, now())
    from workspaces w, ${asyncCommit} as durability
    where j.id = any(${sql.array(jobIds, 'text')}) and j.status in ('queued', 'running') and w.id = j.workspace_id
    returning ${joinedColumns}, w.currency
  `);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return jobIds.map((id) => byId.get(id) ?? null);
}

/**
 * As markJobsRunning, without the mark: reads unfinished jobs (a job that already finished is not
 * returned) with the workspace currency, any number in one statement. For jobs whose running state
 * nobody watches (see marksRunning), so starting one writes nothing.
 */
export async function readUnfinishedJobs(db: Db, jobIds: string[]): Promise<(RunningJobRow | null)[]> {
  const rows = await db.any(sql.prepared('jobs_read_unfinished', runningJobRow)`
    select ${joinedColumns}, w.currency from jobs j join workspaces w on w.id = j.workspace_id
    where j.id = any(${sql.array(jobIds, 'text')}) and j.status in ('queued', 'running')
  `);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return jobIds.map((id) => byId.get(id) ?? null);
}

const finishedIdRow = z.object({ id: z.string() });

/** How an unbilled job ended, for finishUnbilledJobs. */
export type UnbilledOutcome = {
  jobId: string;
  status: 'succeeded' | 'cancelled';
  result: unknown;
  meteringId: string;
  usage: Record<string, number>;
};

/**
 * Finishes unfinished jobs that hold no credit and announce nothing, each with its (zero-cost)
 * metering record, any number in one statement (workers batch concurrent finishes): the common case
 * of test keys. Such a job may still read `queued` (an inline job is never marked running). Says
 * per outcome whether it finished the job: false when an earlier attempt already had (a retry).
 * Committed asynchronously: such a job costs nothing. If a database crash loses the finish, either
 * it also lost graphile-worker's later (durable) completion of the job, which then runs again, or
 * (an inline job, whose queue job is let go first: see worker/deferredFinishes.ts) the reconciler
 * ends the job.
 */
export async function finishUnbilledJobs(db: Db, outcomes: UnbilledOutcome[]): Promise<boolean[]> {
  const given = outcomes.map((o) => ({
    id: o.jobId,
    status: o.status,
    result: o.result ?? null,
    metering_id: o.meteringId,
    usage: o.usage,
  }));
  // Prepared: parsing and planning this statement cost more than running it. Its generic plan
  // probes the primary key with the id list once the table has grown past a few pages.
  const finished = await db.anyFirst(sql.prepared('jobs_finish_unbilled', finishedIdRow)`
    with given as (
      select * from jsonb_to_recordset(${jsonText(given)}::jsonb) as t(
        id text, status text, result jsonb, metering_id text, usage jsonb)
    ), done as (
      update jobs j set status = g.status, result = g.result, cost_minor = 0, completed_at = now()
      from given g
      -- The id list lets the planner see how few rows it updates ("given" is an opaque function).
      where j.id = any(${sql.array(
        outcomes.map((o) => o.jobId),
        'text',
      )}) and j.id = g.id and j.status in ('queued', 'running') and j.hold_id is null
      returning j.id, j.workspace_id, j.project_id, j.key_id, j.oauth_app_id, j.type, j.livemode, j.request_id
    ), metered as (
      insert into metering_records (id, job_id, workspace_id, project_id, key_id, oauth_app_id, operation, livemode,
                                    usage, cost_minor, currency, request_id)
      select g.metering_id, d.id, d.workspace_id, d.project_id, d.key_id, d.oauth_app_id, d.type, d.livemode,
             g.usage, 0, w.currency, d.request_id
      from done d join given g on g.id = d.id join workspaces w on w.id = d.workspace_id
      -- Once per job: only a finish that ended the job gets here, and the claim trigger
      -- (metering_records_claim) drops a second record of a job.
      where d.project_id is not null
    )
    select id from done, ${asyncCommit} as durability
  `);
  const done = new Set(finished);
  return outcomes.map((o) => done.has(o.jobId));
}

/** Fails an unfinished job that holds no credit (an inline job that ran out of attempts). */
export async function failUnbilledJob(db: Db, jobId: string, error: unknown): Promise<void> {
  await db.query(sql.prepared('jobs_fail_unbilled', noRows)`
    update jobs set status = 'failed', result = null, error = ${sql.jsonb(error as never)}, cost_minor = 0,
                    completed_at = now()
    where id = ${jobId} and status in ('queued', 'running') and hold_id is null
  `);
}

export async function markJobQueued(db: Db, jobId: string): Promise<void> {
  await db.query(
    sql.prepared(
      'jobs_mark_queued',
      noRows,
    )`update jobs set status = 'queued' where id = ${jobId} and status = 'running'`,
  );
}

export async function finishJob(
  db: Db,
  jobId: string,
  outcome: {
    status: 'succeeded' | 'failed' | 'cancelled';
    result: unknown;
    error: unknown;
    costMinor: number | null;
  },
): Promise<JobRow> {
  return db.one(sql.type(jobRow)`
    update jobs
    set status = ${outcome.status}, result = ${outcome.result === null ? null : sql.jsonb(outcome.result as never)},
        error = ${outcome.error === null ? null : sql.jsonb(outcome.error as never)},
        cost_minor = ${outcome.costMinor}, completed_at = now()
    where id = ${jobId}
    returning ${columns}
  `);
}

export async function requestJobCancel(db: Db, jobId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set cancel_requested_at = coalesce(cancel_requested_at, now())
    where id = ${jobId} and status in ('queued', 'running')
  `);
}

/**
 * Reads a finished job and drops its input and result in the same statement: a synchronous
 * endpoint hands its output over once and keeps nothing (spec: text and image generation store
 * nothing). Nothing happens, and null comes back, while the job is still queued or running.
 */
export function takeFinishedJob(db: Db, jobId: string) {
  return db.maybeOne(sql.type(jobRow)`
    update jobs j set result = null, input = ${keptInput(sql.identifier(['j', 'input']))}
    from (
      select ${columns} from jobs
      where id = ${jobId} and status in ('succeeded', 'failed', 'cancelled') for no key update
    ) old, ${asyncCommit} as durability
    where j.id = old.id
    returning ${oldColumns}
  `);
}

/**
 * Drops inputs and results of finished synchronous jobs that were not handed over (the api process
 * died while waiting, the client went away, the job failed).
 */
export async function purgeUncollectedResults(
  db: Db,
  types: string[],
  olderThanMinutes: number,
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set result = null, input = ${keptInput(sql.identifier(['input']))}
    where type = any(${sql.array(types, 'text')}) and (result is not null or input <> ${keptInput(sql.identifier(['input']))})
      and completed_at < now() - make_interval(mins => ${olderThanMinutes})
  `);
}

const inputKeyRow = z.object({ key: z.string() });

/** Which of these upload keys a queued or running job still needs. */
export function findActiveInputKeys(db: Db, keys: string[]) {
  return db.anyFirst(sql.type(inputKeyRow)`
    select distinct input ->> 'objectKey' as key from jobs
    where completed_at is null and input ->> 'objectKey' = any(${sql.array(keys, 'text')})
  `);
}

/** Empties delivered synchronous jobs (see takeFinishedJob), many at once, committed asynchronously. */
export async function dropDeliveredJobs(db: Db, jobIds: string[]): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set result = null, input = ${keptInput(sql.identifier(['input']))}
    from ${asyncCommit} as durability
    where id = any(${sql.array(jobIds, 'text')})
  `);
}

/**
 * Puts a running job back in the queue as a new queue job (its current attempt does not count): a
 * worker that is stopping hands its jobs back this way instead of failing the attempt, which on the
 * last one would leave the job to the reconciler; a job that met a storage outage on its last attempt
 * comes back after `delaySeconds`. Nothing happens to a job that already finished.
 */
export async function requeueJob(
  db: Db,
  jobId: string,
  task: {
    identifier: string;
    payload: Record<string, unknown>;
    maxAttempts: number;
    priority: number;
    delaySeconds?: number;
  },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set status = 'queued', queue_job_id = (graphile_worker.add_job(
      ${task.identifier}, ${sql.json(task.payload as never)},
      max_attempts => ${task.maxAttempts}, priority => ${task.priority},
      run_at => now() + make_interval(secs => ${task.delaySeconds ?? 0})
    )).id
    where id = ${jobId} and status in ('queued', 'running')
  `);
}

const abandonedRow = z.object({ id: z.string(), type: z.string() });

/**
 * Unfinished jobs the queue will never run again: their queue job is gone (completed without the row
 * finishing) or has used up its attempts and is not locked by a live worker (the liveness reaper
 * unlocks the jobs of dead ones). Older than `minAgeSeconds`, so a job being created is never taken.
 * A task reply waiting for its turn has no queue job yet and is not abandoned: it gets one when the
 * reply before it ends, whoever ends that one. Reads graphile-worker's public `jobs` view.
 */
export function findAbandonedJobs(db: Db, minAgeSeconds: number, limit: number) {
  return db.any(sql.type(abandonedRow)`
    select j.id, j.type from jobs j
    left join graphile_worker.jobs q on q.id = j.queue_job_id
    where j.completed_at is null
      and j.created_at < now() - make_interval(secs => ${minAgeSeconds})
      and (q.id is null or (q.attempts >= q.max_attempts and q.locked_at is null))
      and not exists (select 1 from task_reply_queue r where r.job_id = j.id and r.dispatched_at is null)
    order by j.created_at
    limit ${limit}
  `);
}

const holdIdRow = z.object({ id: z.string() });

/**
 * Credit holds still held although no unfinished job carries them (the job finished without closing
 * its hold, or never existed): nothing will ever settle them.
 */
export function findStrandedHolds(db: Db, minAgeSeconds: number, limit: number) {
  return db.anyFirst(sql.type(holdIdRow)`
    select h.id from credit_holds h
    where h.status = 'held' and h.created_at < now() - make_interval(secs => ${minAgeSeconds})
      and not exists (
        select 1 from jobs j where j.hold_id = h.id and j.completed_at is null
      )
    order by h.created_at
    limit ${limit}
  `);
}
