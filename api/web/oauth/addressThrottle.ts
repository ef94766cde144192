import { type Clock, systemClock } from '../../../shared/primitives/clock.ts';

/** The budget of anonymous work that costs this server something (a row, an outbound fetch). */
export type ThrottleLimits = { perWindow: number; windowMs: number; maxAddresses: number };

// Enough for a person trying several MCP clients in an hour, not for filling a table or using this
// server to fetch URLs in bulk.
export const anonymousWorkLimits: ThrottleLimits = {
  perWindow: 30,
  windowMs: 3_600_000,
  maxAddresses: 10_000,
};

/**
 * A fixed window per client address, in this api process (each process has its own budget, as its
 * own cache of what the budget protects). Windows sit in a Map in the order they opened: past
 * `maxAddresses`, the oldest window, the one closest to ending anyway, is dropped, never all of them.
 */
export class AddressThrottle {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly limits: ThrottleLimits;
  private readonly clock: Clock;

  constructor(limits: ThrottleLimits = anonymousWorkLimits, clock: Clock = systemClock) {
    this.limits = limits;
    this.clock = clock;
  }

  /** Counts one unit for the address: null when within budget, else the seconds until its window ends. */
  take(address: string): number | null {
    const now = this.clock();
    const window = this.windows.get(address);
    if (!window || now - window.start >= this.limits.windowMs) {
      // Deleted first, so the new window goes to the end of the opening order.
      this.windows.delete(address);
      this.windows.set(address, { start: now, count: 1 });
      while (this.windows.size > this.limits.maxAddresses) {
        const oldest = this.windows.keys().next();
        if (oldest.done) break;
        this.windows.delete(oldest.value);
      }
      return null;
    }
    if (window.count >= this.limits.perWindow) {
      return Math.max(1, Math.ceil((window.start + this.limits.windowMs - now) / 1000));
    }
    window.count += 1;
    return null;
  }
}
