import type { DatabasePool } from 'slonik';

import {
  purgeExpiredStreamLeases,
  releaseStreamLease,
  secondsUntilStreamLeaseExpires,
  takeStreamLease,
} from '../db/queries/streamLeases.ts';
import { AppError } from '../errors/appError.ts';
import type { Logger } from '../observability/logger.ts';
import { newId } from '../primitives/ids.ts';

/**
 * Added to a stream's longest life to make its lease's lifetime: the lease's expiry is taken on the
 * database's clock when the row is written, the stream's timers start here afterwards, and a text
 * stream's job is created between the two.
 */
const expiryMarginMs = 15_000;
// Retry-After never sends a client away for longer than a task stream's hold.
const maxRetryAfterSeconds = 60;

/** One open stream's place in its workspace's count. `release` gives it back (once, whatever calls it). */
export type StreamLease = { readonly id: string; release(): void };

/**
 * The per-workspace limit on open server-sent event streams, held across every api process by lease
 * rows in PostgreSQL (stream_leases, stream_lease_counts). Opening a stream costs one statement (the
 * count row is incremented under the limit and the lease inserted together); closing it one more
 * (the row deleted, the count decremented). A lease expires by itself after the stream's longest
 * possible life, so a process that dies with streams open cannot leak its count: its leases are
 * purged when the workspace next reaches its limit. Nothing is kept in this process but the
 * releases still in flight.
 */
export class StreamLeases {
  private readonly pool: DatabasePool;
  private readonly logger: Logger;
  private readonly limit: number;
  private readonly releasing = new Set<Promise<void>>();
  private heldHere = 0;

  constructor(pool: DatabasePool, logger: Logger, limit: number) {
    this.pool = pool;
    this.logger = logger;
    this.limit = limit;
  }

  /** Leases this process holds (diagnostics and tests). */
  get held(): number {
    return this.heldHere;
  }

  /**
   * Takes a lease for a stream that lives at most `lifetimeMs` (its hold and its last flush).
   * @throws AppError rate_limited (429, Retry-After: seconds until the workspace's first lease
   *   expires, at most 60) when the workspace already has its limit of streams open.
   */
  async acquire(workspaceId: string, lifetimeMs: number): Promise<StreamLease> {
    const id = newId('sse');
    const lease = { id, workspaceId, limit: this.limit, ttlMs: lifetimeMs + expiryMarginMs };
    let taken = await takeStreamLease(this.pool, lease);
    // At the limit: leases a dead process left behind may have expired; they count no more.
    if (!taken && (await purgeExpiredStreamLeases(this.pool, workspaceId)) > 0) {
      taken = await takeStreamLease(this.pool, lease);
    }
    if (!taken) {
      const seconds = (await secondsUntilStreamLeaseExpires(this.pool, workspaceId)) ?? 1;
      const retryAfter = Math.min(maxRetryAfterSeconds, Math.max(1, seconds));
      throw new AppError(
        'rate_limited',
        `This workspace already has ${this.limit} streams open; close one or retry after ${retryAfter} s.`,
        { headers: { 'Retry-After': String(retryAfter) } },
      );
    }
    this.heldHere++;
    let released = false;
    return {
      id,
      release: () => {
        if (released) return;
        released = true;
        this.heldHere--;
        const done = releaseStreamLease(this.pool, id)
          .catch((error: unknown) =>
            this.logger.warn(
              { err: error, leaseId: id },
              'releasing a stream lease failed; it expires by itself',
            ),
          )
          .finally(() => this.releasing.delete(done));
        this.releasing.add(done);
      },
    };
  }

  /** Resolves once every release started so far has reached the database (before the pool closes). */
  async settle(): Promise<void> {
    while (this.releasing.size > 0) await Promise.all([...this.releasing]);
  }
}
