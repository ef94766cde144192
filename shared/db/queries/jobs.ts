import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

export const jobStatus = z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']);
export type JobStatus = z.infer<typeof jobStatus>;

const jobRow = z.object({
  id: z.string(),
  workspace_id: z.string(),
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
  cancel_requested_at: z.string().nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
});
export type JobRow = z.infer<typeof jobRow>;

const columns = sql.fragment`
  id, workspace_id, project_id, key_id, type, status, livemode, input, result, error, hold_id, cost_minor,
  request_id, cancel_requested_at, created_at, started_at, completed_at
`;

export type NewJob = {
  id: string;
  workspaceId: string;
  projectId: string | null;
  keyId: string | null;
  type: string;
  livemode: boolean;
  input: Record<string, unknown>;
  holdId: string | null;
  requestId: string | null;
};

export function insertJob(db: Db, job: NewJob) {
  return db.one(sql.type(jobRow)`
    insert into jobs (id, workspace_id, project_id, key_id, type, livemode, input, hold_id, request_id)
    values (${job.id}, ${job.workspaceId}, ${job.projectId}, ${job.keyId}, ${job.type}, ${job.livemode},
            ${sql.jsonb(job.input as never)}, ${job.holdId}, ${job.requestId})
    returning ${columns}
  `);
}

/** A job that is born finished (test-key fixtures answer with an already succeeded job). */
export function insertFinishedJob(db: Db, job: NewJob & { result: unknown }) {
  return db.one(sql.type(jobRow)`
    insert into jobs (id, workspace_id, project_id, key_id, type, livemode, input, hold_id, request_id,
                      status, result, cost_minor, started_at, completed_at)
    values (${job.id}, ${job.workspaceId}, ${job.projectId}, ${job.keyId}, ${job.type}, ${job.livemode},
            ${sql.jsonb(job.input as never)}, ${job.holdId}, ${job.requestId},
            'succeeded', ${sql.jsonb(job.result as never)}, 0, now(), now())
    returning ${columns}
  `);
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
  return db.maybeOne(sql.type(jobRow)`select ${columns} from jobs where id = ${jobId} for update`);
}

/** queued (or running again after a crash) → running; nothing when the job already finished. */
export function markJobRunning(db: Db, jobId: string) {
  return db.maybeOne(sql.type(jobRow)`
    update jobs set status = 'running', started_at = coalesce(started_at, now())
    where id = ${jobId} and status in ('queued', 'running')
    returning ${columns}
  `);
}

export async function markJobQueued(db: Db, jobId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`update jobs set status = 'queued' where id = ${jobId} and status = 'running'`);
}

export async function finishJob(
  db: Db,
  jobId: string,
  outcome: { status: 'succeeded' | 'failed' | 'cancelled'; result: unknown; error: unknown; costMinor: number | null },
): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs
    set status = ${outcome.status}, result = ${outcome.result === null ? null : sql.jsonb(outcome.result as never)},
        error = ${outcome.error === null ? null : sql.jsonb(outcome.error as never)},
        cost_minor = ${outcome.costMinor}, completed_at = now()
    where id = ${jobId}
  `);
}

export async function requestJobCancel(db: Db, jobId: string): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set cancel_requested_at = coalesce(cancel_requested_at, now())
    where id = ${jobId} and status in ('queued', 'running')
  `);
}

/** Hands the result over once: synchronous endpoints' outputs are not kept after delivery (spec: nothing stored). */
export function takeJobResult(db: Db, jobId: string) {
  return db.maybeOne(sql.type(z.object({ result: z.unknown() }))`
    update jobs j set result = null from (select id, result from jobs where id = ${jobId} for update) old
    where j.id = old.id returning old.result
  `);
}

/** Drops results of synchronous jobs nobody collected (their api process died while waiting). */
export async function purgeUncollectedResults(db: Db, types: string[], olderThanMinutes: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    update jobs set result = null
    where type = any(${sql.array(types, 'text')}) and result is not null
      and completed_at < now() - make_interval(mins => ${olderThanMinutes})
  `);
}
