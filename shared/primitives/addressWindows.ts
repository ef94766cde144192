import { type Clock, systemClock } from './clock.ts';

/** A budget per client address: units per window, the window's length, and how many addresses are remembered. */
export type WindowLimits = { perWindow: number; windowMs: number; maxAddresses: number };

/**
 * A fixed window per client address, in this process. Windows sit in a Map in the order they opened:
 * past `maxAddresses`, the oldest window, the one closest to ending anyway, is dropped, never all of
 * them (a flood from many addresses then costs each address at most a fresh budget).
 */
export class AddressWindows {
  private readonly windows = new Map<string, { start: number; count: number }>();
  private readonly limits: WindowLimits;
  private readonly clock: Clock;

  constructor(limits: WindowLimits, clock: Clock = systemClock) {
    this.limits = limits;
    this.clock = clock;
  }

  /** Null while the address's current window has budget left, else the seconds until that window ends. */
  retryAfter(address: string): number | null {
    const window = this.windows.get(address);
    if (!window || window.count < this.limits.perWindow) return null;
    const left = window.start + this.limits.windowMs - this.clock();
    return left > 0 ? Math.max(1, Math.ceil(left / 1000)) : null;
  }

  /** Counts one unit for the address, in a new window when it has none open. */
  count(address: string): void {
    const now = this.clock();
    const window = this.windows.get(address);
    if (window && now - window.start < this.limits.windowMs) {
      window.count += 1;
      return;
    }
    // Deleted first, so the new window goes to the end of the opening order.
    this.windows.delete(address);
    this.windows.set(address, { start: now, count: 1 });
    while (this.windows.size > this.limits.maxAddresses) {
      const oldest = this.windows.keys().next();
      if (oldest.done) break;
      this.windows.delete(oldest.value);
    }
  }
}
