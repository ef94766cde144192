import type { DatabasePool } from 'slonik';

import { leaseRateLimit, openRateLimitWindow } from '../../shared/db/queries/rateLimits.ts';

const windowMs = 60_000;

type Local = { window: number; tokens: number; exhausted: boolean; pending: Promise<void> | undefined };

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/**
 * Fixed one-minute windows per workspace, counted in Postgres so every api process shares them.
 * Each process leases small blocks of the window (1/50 of the limit) and spends them locally, so a
 * request costs a database round trip only once per block; the total granted across processes can
 * never pass the limit, and at most one unspent block per process is lost when a window closes.
 */
export class RateLimiter {
  private readonly local = new Map<string, Local>();
  private readonly pool: DatabasePool;
  private readonly clock: () => number;

  /** `clock` (epoch milliseconds) picks the window; tests pass their own to cross a minute at will. */
  constructor(pool: DatabasePool, clock: () => number = Date.now) {
    this.pool = pool;
    this.clock = clock;
  }

  async take(workspaceId: string, limit: number, now = this.clock()): Promise<RateDecision> {
    const window = Math.floor(now / windowMs);
    let state = this.local.get(workspaceId);
    if (!state || state.window !== window) {
      state = { window, tokens: 0, exhausted: false, pending: undefined };
      this.local.set(workspaceId, state);
    }
    for (;;) {
      if (state.tokens > 0) {
        state.tokens--;
        return { allowed: true };
      }
      if (state.exhausted) {
        return {
          allowed: false,
          retryAfterSeconds: Math.max(1, Math.ceil(((window + 1) * windowMs - now) / 1000)),
        };
      }
      // One lease at a time per workspace and process; concurrent requests wait for it.
      state.pending ??= this.lease(state, workspaceId, limit).finally(() => {
        state.pending = undefined;
      });
      await state.pending;
    }
  }

  private async lease(state: Local, workspaceId: string, limit: number): Promise<void> {
    const block = Math.max(1, Math.floor(limit / 50));
    const windowStart = new Date(state.window * windowMs).toISOString();
    let granted = await leaseRateLimit(this.pool, workspaceId, windowStart, block, limit);
    if (granted === null) {
      await openRateLimitWindow(this.pool, workspaceId, windowStart);
      granted = (await leaseRateLimit(this.pool, workspaceId, windowStart, block, limit)) ?? 0;
    }
    if (granted === 0) state.exhausted = true;
    state.tokens += granted;
  }
}
