import { z } from 'zod';

import type { BrainSynthesizePayload } from './brain/synthesis.ts';
import { Batcher } from './db/batcher.ts';
import {
  insertInlineJobs,
  insertJobAndEnqueue,
  insertTaskReplyJob,
  type JobRow,
  type NewInlineJob,
  type NewJob,
  type ReplyTurn,
} from './db/queries/jobs.ts';
import { type DatabasePool, type Db, sql } from './db/sql.ts';
import type { FilesParsePayload } from './files/nativeDocuments.ts';
import { newId } from './ids.ts';
import type { WebhookDeliverPayload } from './webhooks/fanout.ts';

/**
 * Every job type: the graphile-worker task that runs it, how often it is tried, and whether it is a
 * public job (readable through GET /jobs/{jobId} and announced as job.succeeded / job.failed).
 * Synchronous jobs hand their result to the waiting request once and then drop it.
 */
export const jobSpecs = {
  'text.generate': { task: 'text__generate', maxAttempts: 3, priority: 0, isPublic: false, isSync: true },
  'images.generate': { task: 'images__generate', maxAttempts: 3, priority: 0, isPublic: false, isSync: true },
  'embeddings.create': {
    task: 'embeddings__create',
    maxAttempts: 3,
    priority: 0,
    isPublic: false,
    isSync: true,
  },
  'transcriptions.create': {
    task: 'transcriptions__create',
    maxAttempts: 3,
    priority: 0,
    isPublic: false,
    isSync: true,
  },
  'ocr.extract': { task: 'ocr__extract', maxAttempts: 3, priority: 1, isPublic: true, isSync: false },
  'video.generate': { task: 'video__generate', maxAttempts: 3, priority: 2, isPublic: true, isSync: false },
  'deck.export': { task: 'deck__export', maxAttempts: 3, priority: 2, isPublic: true, isSync: false },
  'task.reply': { task: 'task__reply', maxAttempts: 5, priority: 0, isPublic: false, isSync: false },
} as const;

export type JobType = keyof typeof jobSpecs;

const typeOfTask = new Map<string, JobType>(
  Object.entries(jobSpecs).map(([type, spec]) => [spec.task, type as JobType]),
);

/** The job type a graphile-worker task identifier runs, if it runs one. */
export function jobTypeOfTask(identifier: string): JobType | undefined {
  return typeOfTask.get(identifier);
}

/**
 * Whether a worker marks a job `running` when it starts it: an asynchronous job's run is watched
 * (GET /jobs/{jobId} shows it; a task's replies are ordered by it) and may last minutes. A
 * synchronous job's only watcher is its caller, waiting on the request for the end, so the mark
 * would be a write per job that nobody reads.
 */
export function marksRunning(type: JobType | undefined): boolean {
  return type === undefined || !jobSpecs[type].isSync;
}

export function isJobType(value: string): value is JobType {
  return Object.hasOwn(jobSpecs, value);
}

/**
 * What the worker needs of an unbilled synchronous job (test keys): no hold to settle, no money to
 * move, no public status to show, so it travels in the payload and the worker starts it without
 * reading or marking the row (one statement less on the hot path; the prompt never lands in `jobs`).
 */
const inlineJob = z.object({
  type: z.string(),
  workspace_id: z.string(),
  project_id: z.string().nullable(),
  key_id: z.string().nullable(),
  input: z.record(z.string(), z.unknown()),
  request_id: z.string().nullable(),
});
export type InlineJob = z.infer<typeof inlineJob>;

/** Payload of every job task: the job's id; the row holds the rest, except for inline jobs. */
export const jobPayload = z.object({ jobId: z.string(), inline: inlineJob.optional() });
export type JobPayload = z.infer<typeof jobPayload>;

type NoPayload = Record<string, never>;

/**
 * Every graphile-worker task with its payload, in one place: `enqueue` and the worker's task list
 * are typed by it. Payloads are still parsed with their zod schema first thing in each task (the
 * queue holds JSON written by whichever version enqueued it).
 */
declare global {
  namespace GraphileWorker {
    interface Tasks {
      text__generate: JobPayload;
      images__generate: JobPayload;
      embeddings__create: JobPayload;
      transcriptions__create: JobPayload;
      ocr__extract: JobPayload;
      video__generate: JobPayload;
      deck__export: JobPayload;
      task__reply: JobPayload;
      webhook__deliver: WebhookDeliverPayload;
      status__probe: NoPayload;
      maintenance__prune: NoPayload;
      jobs__reconcile: NoPayload;
      brain__synthesize: BrainSynthesizePayload;
      files__parse: FilesParsePayload;
    }
  }
}

export type TaskName = keyof GraphileWorker.Tasks;

/**
 * Inline jobs are also committed asynchronously (nothing the caller sees depends on that commit
 * alone: the answer waits for the worker's durable finish), so they are only made outside a
 * caller's transaction, whose other writes must stay durable.
 */
function isInline(db: Db, job: Omit<NewJob, 'id'> & { type: JobType }, options: CreateJobOptions): boolean {
  const outsideTransaction = !('transactionId' in db);
  return (
    outsideTransaction &&
    options.turn === undefined &&
    jobSpecs[job.type].isSync &&
    // A public job shows every status of the spec's state machine, running included.
    !jobSpecs[job.type].isPublic &&
    job.holdId === null &&
    !job.livemode
  );
}

export function newJobId(): string {
  return newId('job');
}

/**
 * Adds a graphile-worker job inside the caller's transaction, so the job exists iff the rows commit.
 * The job key makes a repeated enqueue of the same work replace, not duplicate, the pending job;
 * jobs of one queue name run one at a time across every worker.
 */
export async function enqueue<T extends TaskName>(
  tx: Db,
  task: T,
  payload: GraphileWorker.Tasks[T],
  options: {
    jobKey?: string;
    maxAttempts?: number;
    priority?: number;
    runAt?: string;
    queueName?: string;
  } = {},
): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    select from graphile_worker.add_job(
      ${task}, ${sql.json(payload as never)},
      queue_name => ${options.queueName ?? null},
      run_at => ${options.runAt ?? null}::timestamptz,
      max_attempts => ${options.maxAttempts ?? 25},
      job_key => ${options.jobKey ?? null},
      priority => ${options.priority ?? 0}
    )
  `);
}

export type JobToCreate = Omit<NewJob, 'id'> & { id?: string; type: JobType };

/**
 * `turn`: the job is a task reply that waits for the replies to the task's earlier messages to end
 * (replies to one task run one at a time, in message order). Not a graphile-worker named queue:
 * with batched fetching, one long named queue hides every job added after it (see
 * insertTaskReplyJob and migration 000016).
 */
export type CreateJobOptions = { turn?: ReplyTurn };

/**
 * Creates jobs for one process: a job that can run inline (see isInline) goes through a batcher
 * shared by the process's concurrent callers (group commit), every other one through createJob.
 * Built once per api process (AppDeps.jobs).
 */
export class JobCreator {
  private readonly inline: Batcher<NewInlineJob, JobRow>;

  constructor(pool: DatabasePool) {
    this.inline = new Batcher((jobs) => insertInlineJobs(pool, jobs));
  }

  /** As createJob; inline jobs are only made outside a caller's transaction. */
  create(db: Db, job: JobToCreate, options: CreateJobOptions = {}): Promise<JobRow> {
    if (!isInline(db, job, options)) return createJob(db, job, options);
    const spec = jobSpecs[job.type];
    const id = job.id ?? newJobId();
    const inline: InlineJob = {
      type: job.type,
      workspace_id: job.workspaceId,
      project_id: job.projectId,
      key_id: job.keyId,
      input: job.input,
      request_id: job.requestId,
    };
    return this.inline.submit({
      ...job,
      id,
      task: spec.task,
      payload: { jobId: id, inline } satisfies JobPayload,
      maxAttempts: spec.maxAttempts,
      priority: spec.priority,
    });
  }
}

/**
 * Inserts a job row and enqueues its task (payload: JobPayload) in one statement, so it is atomic
 * on its own and joins the caller's transaction when there is one. A job with a `turn` is enqueued
 * when its turn comes (see CreateJobOptions). A caller that must listen for the job before it can
 * start (its deltas) allocates the id itself with `newJobId`.
 */
export function createJob(db: Db, job: JobToCreate, options: CreateJobOptions = {}): Promise<JobRow> {
  const spec = jobSpecs[job.type];
  const id = job.id ?? newJobId();
  const task = {
    identifier: spec.task,
    payload: { jobId: id } satisfies JobPayload,
    maxAttempts: spec.maxAttempts,
    priority: spec.priority,
  };
  if (options.turn) return insertTaskReplyJob(db, { ...job, id }, options.turn, task);
  return insertJobAndEnqueue(db, { ...job, id }, task);
}

/** The public job record (spec "Job"). */
export function toJobDto(job: JobRow) {
  return {
    id: job.id,
    type: job.type,
    status: job.status,
    result: job.status === 'succeeded' ? (job.result ?? null) : null,
    error: job.status === 'failed' ? (job.error ?? null) : null,
    createdAt: job.created_at,
    completedAt: job.completed_at,
  };
}
