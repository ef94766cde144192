import type { DatabasePool } from 'slonik';

import { dropDeliveredJobs, findJob, type JobRow, takeFinishedJob } from '../db/queries/jobs.ts';
import { AppError } from '../errors/appError.ts';
import type { Logger } from '../observability/logger.ts';
import type { ChannelPayload } from '../realtime/channels.ts';
import { KeyedChannel, type NotificationHub } from '../realtime/pubsub.ts';

const terminal = new Set(['succeeded', 'failed', 'cancelled']);

// NOTIFY is the fast path; this slow re-read only covers a notification lost in a way the hub cannot see.
const safetyPollMs = 5000;
// Delivered results are emptied in batches, off the response's path.
const dropEveryMs = 100;

/** What a waiter learns of a finished job. */
export type FinishedJob = Pick<JobRow, 'id' | 'status' | 'result' | 'error' | 'cost_minor'>;

/** A small result and the cost ride along (see shared/realtime/channels.ts). */
type JobUpdate = ChannelPayload<'jobs:update'>;

export type WaitOptions = { timeoutMs: number; signal?: AbortSignal; fresh?: boolean; take?: boolean };

/** A job's end being listened for; see JobWaiter.watch. */
export type JobWatch = { finished(options: WaitOptions): Promise<FinishedJob>; close(): void };

/** Lets api requests wait for a job to finish, woken by the `jobs:update` notification. */
export class JobWaiter {
  private readonly updates: KeyedChannel<'jobs:update'>;
  private readonly pool: DatabasePool;
  private readonly hub: NotificationHub;
  private readonly logger: Logger;
  private drops: string[] = [];
  private dropTimer: NodeJS.Timeout | undefined;

  constructor(pool: DatabasePool, hub: NotificationHub, logger: Logger) {
    this.pool = pool;
    this.hub = hub;
    this.logger = logger;
    this.updates = new KeyedChannel(hub, 'jobs:update');
  }

  /** Writes out the pending drops (on shutdown). */
  async close(): Promise<void> {
    clearTimeout(this.dropTimer);
    await this.flushDrops();
  }

  private dropLater(jobId: string): void {
    this.drops.push(jobId);
    this.dropTimer ??= setTimeout(() => void this.flushDrops(), dropEveryMs);
    this.dropTimer.unref();
  }

  private async flushDrops(): Promise<void> {
    this.dropTimer = undefined;
    const ids = this.drops;
    this.drops = [];
    if (ids.length === 0) return;
    // If this fails the hourly maintenance purge empties them; the answers are already sent.
    await dropDeliveredJobs(this.pool, ids).catch((error: unknown) =>
      this.logger.warn({ err: error, jobs: ids.length }, 'emptying delivered jobs failed'),
    );
  }

  /** LISTENs before the first wait, so a job created after this resolves cannot finish unheard. */
  async start(): Promise<void> {
    await this.updates.listen();
  }

  /**
   * Resolves with the finished job row. `fresh`: the caller waits before it creates the job (a quick
   * worker can finish it before the insert's answer is back), so there is nothing to read yet and
   * the first read is skipped (it would only compete with the worker).
   * `take`: the finished row's input and result are dropped once read (synchronous endpoints); a
   * small result arrives in the notification itself, and the row is then emptied in a later batch.
   * @throws AppError internal_error when `timeoutMs` passes first; the abort reason when `signal` aborts.
   */
  wait(jobId: string, options: WaitOptions): Promise<FinishedJob> {
    return this.watch(jobId).finished(options);
  }

  /**
   * Starts listening for the end of `jobId` now, for a wait that comes later: a caller about to
   * create a job watches it first (a quick worker can finish it before the insert's answer is
   * back). Nothing can settle before `finished`; `close` lets go of a watch that is not waited on.
   */
  watch(jobId: string): JobWatch {
    let heard: JobUpdate | undefined;
    let reconnected = false;
    let onEnd: ((update: JobUpdate) => void) | undefined;
    const off = this.updates.on(jobId, (update) => {
      if (!terminal.has(update.status)) return;
      if (onEnd) onEnd(update);
      else heard = update;
    });
    const offReconnect = this.hub.onReconnect(() => (reconnected = true));
    const close = () => {
      off();
      offReconnect();
    };
    return {
      finished: (options) =>
        this.waitOn(
          jobId,
          { ...options, fresh: options.fresh && !reconnected },
          {
            close,
            attach: (listener) => {
              onEnd = listener;
              return heard;
            },
          },
        ),
      close,
    };
  }

  private waitOn(
    jobId: string,
    options: WaitOptions,
    watch: { attach(onEnd: (update: JobUpdate) => void): JobUpdate | undefined; close(): void },
  ): Promise<FinishedJob> {
    return new Promise<FinishedJob>((resolve, reject) => {
      let settled = false;
      const cleanups: (() => void)[] = [watch.close];
      const finish = (outcome: { job: FinishedJob } | { error: unknown }) => {
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
      const onEnd = (p: JobUpdate) => {
        if (
          options.take &&
          p.status === 'succeeded' &&
          p.result !== undefined &&
          p.result !== null &&
          !reading
        ) {
          finish({
            job: {
              id: jobId,
              status: 'succeeded',
              result: p.result,
              error: null,
              cost_minor: p.cost ?? null,
            },
          });
          this.dropLater(jobId);
          return;
        }
        void check();
      };
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
      // Last, once every cleanup is registered: an end the watch already heard settles at once.
      const heard = watch.attach(onEnd);
      if (heard) onEnd(heard);
      else if (!options.fresh || !this.hub.isConnected) void check();
    });
  }
}
