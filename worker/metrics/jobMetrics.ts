import type { WorkerEvents } from 'graphile-worker';
import { Counter, Histogram, type Registry } from 'prom-client';

export type FinishOutcome = 'succeeded' | 'failed' | 'cancelled' | 'retried';

/**
 * svc_job_duration_seconds{task,outcome} and svc_jobs_finished_total{task,outcome}, from the
 * runners' job:start and job:complete events. A queue job that ends without an error may still have
 * failed for good, been cancelled or been handed back to the queue: the job engine says so first
 * (`note`); otherwise an error is a retry until the last attempt, and its absence a success.
 */
export class JobMetrics {
  private readonly duration: Histogram<'task' | 'outcome'>;
  private readonly finished: Counter<'task' | 'outcome'>;
  private readonly started = new Map<string, bigint>();
  private readonly noted = new Map<string, FinishOutcome>();

  constructor(registry: Registry, events: WorkerEvents) {
    this.duration = new Histogram({
      name: 'svc_job_duration_seconds',
      help: 'Time a worker spent on one attempt of a job, by task and how the attempt ended.',
      labelNames: ['task', 'outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
      registers: [registry],
    });
    this.finished = new Counter({
      name: 'svc_jobs_finished_total',
      help: 'Job attempts ended, by task and outcome (succeeded, failed, cancelled, retried).',
      labelNames: ['task', 'outcome'],
      registers: [registry],
    });
    events.on('job:start', ({ job }) => this.started.set(job.id, process.hrtime.bigint()));
    events.on('job:complete', ({ job, error }) => {
      const startedAt = this.started.get(job.id);
      this.started.delete(job.id);
      const outcome =
        this.noted.get(job.id) ??
        (error === undefined || error === null
          ? 'succeeded'
          : job.attempts >= job.max_attempts
            ? 'failed'
            : 'retried');
      this.noted.delete(job.id);
      const labels = { task: job.task_identifier, outcome };
      this.finished.inc(labels);
      if (startedAt !== undefined) {
        this.duration.observe(labels, Number(process.hrtime.bigint() - startedAt) / 1e9);
      }
    });
  }

  /** The engine's verdict on the queue job `queueJobId`, which ends without an error. */
  note(queueJobId: string, outcome: Exclude<FinishOutcome, 'succeeded'>): void {
    this.noted.set(queueJobId, outcome);
  }
}
