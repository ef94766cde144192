import type { DatabasePool } from 'slonik';

import { findJob, type JobRow, takeFinishedJob } from './db/queries/jobs.ts';
import { AppError } from './errors/appError.ts';
import { KeyedChannel, type NotificationHub } from './pubsub.ts';

const terminal = new Set(['succeeded', 'failed', 'cancelled']);

// NOTIFY is the fast path; this slow re-read only covers a notification lost in a way the hub cannot see.
const safetyPollMs = 5000;

/** Lets api requests wait for a job to finish, woken by the `jobs:update` notification. */
export class JobWaiter {
  private readonly updates: KeyedChannel<{ id: string; status: string }>;
  private readonly pool: DatabasePool;
  private readonly hub: NotificationHub;

  constructor(pool: DatabasePool, hub: NotificationHub) {
    this.pool = pool;
    this.hub = hub;
    this.updates = new KeyedChannel(hub, 'jobs:update', 'id');
  }

  /** LISTENs before the first wait, so a job created after this resolves cannot finish unheard. */
  async start(): Promise<void> {
    await this.updates.listen();
  }

  /**
   * Resolves with the finished job row. `fresh`: the job was created after start() by the caller and
   * cannot have finished yet, so the first read is skipped (it would only compete with the worker).
   * `take`: the finished row's input and result are dropped as it is read (synchronous endpoints).
   * @throws AppError internal_error when `timeoutMs` passes first; the abort reason when `signal` aborts.
   */
  wait(
    jobId: string,
    options: { timeoutMs: number; signal?: AbortSignal; fresh?: boolean; take?: boolean },
  ): Promise<JobRow> {
    return new Promise<JobRow>((resolve, reject) => {
      let settled = false;
      const cleanups: (() => void)[] = [];
      const finish = (outcome: { job: JobRow } | { error: unknown }) => {
        if (settled) return;
        settled = true;
        for (const cleanup of cleanups) cleanup();
        if ('job' in outcome) resolve(outcome.job);
        else reject(outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error)));
      };
      // One read at a time: two overlapping takes would hand the second an already emptied row.
      let reading: Promise<void> | undefined;
      let readAgain = false;
      const read = async () => {
        if (options.take) {
          const job = await takeFinishedJob(this.pool, jobId);
          if (job) finish({ job });
          return;
        }
        const job = await findJob(this.pool, jobId);
        if (!job) finish({ error: new Error(`job ${jobId} vanished`) });
        else if (terminal.has(job.status)) finish({ job });
      };
      const check = async (): Promise<void> => {
        if (settled) return;
        if (reading) {
          readAgain = true;
          return;
        }
        reading = read()
          .catch((error: unknown) => finish({ error }))
          .finally(() => {
            reading = undefined;
            if (readAgain && !settled) {
              readAgain = false;
              void check();
            }
          });
      };
      cleanups.push(
        this.updates.on(jobId, (p) => {
          if (terminal.has(p.status)) void check();
        }),
      );
      cleanups.push(this.hub.onReconnect(() => void check()));
      const poll = setInterval(() => void check(), safetyPollMs);
      cleanups.push(() => clearInterval(poll));
      const timer = setTimeout(
        () =>
          finish({
            error: new AppError('internal_error', 'The operation took too long; retry with backoff.'),
          }),
        options.timeoutMs,
      );
      cleanups.push(() => clearTimeout(timer));
      if (options.signal) {
        const signal = options.signal;
        const onAbort = () => finish({ error: signal.reason });
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        cleanups.push(() => signal.removeEventListener('abort', onAbort));
      }
      if (!options.fresh || !this.hub.isConnected) void check();
    });
  }
}
