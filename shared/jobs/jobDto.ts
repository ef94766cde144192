import type { JobRow } from '../db/queries/jobs.ts';

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
