import { Batcher } from '../db/batcher.ts';
import {
  insertInlineJobs,
  insertJobAndEnqueue,
  insertTaskReplyJob,
  type JobRow,
  type NewInlineJob,
  type NewJob,
  type ReplyTurn,
} from '../db/queries/jobs.ts';
import type { DatabasePool, Db } from '../db/sql.ts';
import { activeTrace } from '../observability/traceContext.ts';
import { newId } from '../primitives/ids.ts';
import type { InlineJob, JobPayload } from '../queue/taskMap.ts';
import { jobSpecs, type JobType } from './specs.ts';

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
    const inline: InlineJob = { type: job.type, input: job.input };
    return this.inline.submit({
      ...job,
      id,
      task: spec.task,
      payload: { jobId: id, inline, ...activeTrace() } satisfies JobPayload,
      maxAttempts: spec.maxAttempts,
      priority: spec.priority,
    });
  }
}

/**
 * Inserts a job row and enqueues its task (payload: JobPayload, with the caller's trace context when
 * tracing is on) in one statement, so it is atomic
 * on its own and joins the caller's transaction when there is one. A job with a `turn` is enqueued
 * when its turn comes (see CreateJobOptions). A caller that must listen for the job before it can
 * start (its deltas) allocates the id itself with `newJobId`.
 */
export function createJob(db: Db, job: JobToCreate, options: CreateJobOptions = {}): Promise<JobRow> {
  const spec = jobSpecs[job.type];
  const id = job.id ?? newJobId();
  const task = {
    identifier: spec.task,
    payload: { jobId: id, ...activeTrace() } satisfies JobPayload,
    maxAttempts: spec.maxAttempts,
    priority: spec.priority,
  };
  if (options.turn) return insertTaskReplyJob(db, { ...job, id }, options.turn, task);
  return insertJobAndEnqueue(db, { ...job, id }, task);
}
