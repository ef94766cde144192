import { setTimeout as sleep } from 'node:timers/promises';

import type { UnbilledOutcome } from '../shared/db/queries/jobs.ts';
import type { Logger } from '../shared/observability/logger.ts';

// Within a synchronous caller's wait: a database that hiccups loses no answer.
const defaultRetryDelaysMs = [100, 500, 2000];
// Several batches' worth: never reached while the database keeps up (a few dozen pending on the jobs
// bench); when it does not, jobs wait for room instead of their outputs piling up in memory.
const defaultMaxPending = 256;

/**
 * The finishes of inline jobs (see shared/jobs/createJob.ts), written after their queue jobs are let go.
 *
 * An inline job holds nothing and costs nothing, and its only reader is the caller waiting on its
 * request. Awaiting its finish before graphile-worker may complete the queue job put a round trip of
 * a batched statement in every job's slot, and so bounded a worker's jobs per second (one worker at
 * concurrency 16: 3,300 jobs/s awaited, 5,300 deferred, on the jobs bench). Deferred, the finish is
 * retried here; a finish that never lands (the process dies first, or every retry fails) leaves a
 * job whose queue job is gone, which the reconciler fails within minutes (jobs__reconcile), as it
 * fails any job the queue will not run again. A finish is exactly once either way: it only ends a
 * job still unfinished. At most `maxPending` finishes wait at once: past that, `add` waits for room,
 * and with it the job's slot, as when every finish was awaited.
 */
export class DeferredFinishes {
  private readonly write: (outcome: UnbilledOutcome) => Promise<unknown>;
  private readonly logger: Logger;
  private readonly retryDelaysMs: readonly number[];
  private readonly maxPending: number;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    write: (outcome: UnbilledOutcome) => Promise<unknown>,
    logger: Logger,
    options: { retryDelaysMs?: readonly number[]; maxPending?: number } = {},
  ) {
    this.write = write;
    this.logger = logger;
    this.retryDelaysMs = options.retryDelaysMs ?? defaultRetryDelaysMs;
    this.maxPending = options.maxPending ?? defaultMaxPending;
  }

  /**
   * Writes `outcome` in the background, then runs `after` (the kind's clean-up) once it landed.
   * Resolves at once, or once fewer than `maxPending` finishes are left waiting.
   */
  async add(outcome: UnbilledOutcome, after: () => Promise<void>): Promise<void> {
    const written = this.writeWithRetries(outcome)
      .then((landed) => (landed ? after() : undefined))
      .catch((error: unknown) =>
        this.logger.warn({ err: error, jobId: outcome.jobId }, 'clean-up after an inline job failed'),
      )
      .finally(() => this.pending.delete(written));
    this.pending.add(written);
    while (this.pending.size > this.maxPending) await Promise.race(this.pending);
  }

  /** Resolves once every finish added so far has landed or given up (a stopping worker waits on it). */
  async drain(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private async writeWithRetries(outcome: UnbilledOutcome): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.write(outcome);
        return true;
      } catch (error) {
        const delay = this.retryDelaysMs[attempt];
        if (delay === undefined) {
          this.logger.error(
            { err: error, jobId: outcome.jobId },
            'finishing an inline job failed; the reconciler will end it',
          );
          return false;
        }
        await sleep(delay);
      }
    }
  }
}
