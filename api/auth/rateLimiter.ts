import type { DatabasePool } from 'slonik';

import { leaseRateLimit, openRateLimitWindow } from '../../shared/db/queries/rateLimits.ts';

const windowMs = 60_000;

type Local = {
  window: number;
  tokens: number;
  exhausted: boolean;
  pending: Promise<void> | undefined;
  /** The window's count fleet-wide at this process's last lease. */
  usedAtLease: number;
};

/**
 * What the x-ratelimit-*-requests headers say: the limit, what is left of it (as this process last
 * saw the fleet's window, plus its own unspent lease), and the milliseconds until the window resets.
 */
export type RateWindow = { limit: number; remaining: number; resetMs: number };

export type RateDecision = ({ allowed: true } | { allowed: false; retryAfterSeconds: number }) & {
  window: RateWindow;
};

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
      state = { window, tokens: 0, exhausted: false, pending: undefined, usedAtLease: 0 };
      this.local.set(workspaceId, state);
    }
    for (;;) {
      const resetMs = (window + 1) * windowMs - now;
      if (state.tokens > 0) {
        state.tokens--;
        const remaining = Math.max(0, limit - state.usedAtLease + state.tokens);
        return { allowed: true, window: { limit, remaining, resetMs } };
      }
      if (state.exhausted) {
        return {
          allowed: false,
          retryAfterSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
          window: { limit, remaining: 0, resetMs },
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
    let lease = await leaseRateLimit(this.pool, workspaceId, windowStart, block, limit);
    if (lease === null) {
      await openRateLimitWindow(this.pool, workspaceId, windowStart);
      lease = await leaseRateLimit(this.pool, workspaceId, windowStart, block, limit);
    }
    const granted = lease?.granted ?? 0;
    if (granted === 0) state.exhausted = true;
    state.tokens += granted;
    state.usedAtLease = Math.max(state.usedAtLease, lease?.used ?? limit);
  }
}
