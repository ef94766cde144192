import { AddressWindows, type WindowLimits } from '../../../shared/primitives/addressWindows.ts';
import { type Clock, systemClock } from '../../../shared/primitives/clock.ts';

/**
 * The budget of anonymous work that costs this server something (a row, an outbound fetch): enough
 * for a person trying several MCP clients in an hour, not for filling a table or using this server to
 * fetch URLs in bulk.
 */
export const anonymousWorkLimits: WindowLimits = {
  perWindow: 30,
  windowMs: 3_600_000,
  maxAddresses: 10_000,
};

/**
 * Anonymous work per client address, in this api process (each process has its own budget, as its
 * own cache of what the budget protects): a unit is counted only when it is allowed.
 */
export class AddressThrottle extends AddressWindows {
  constructor(limits: WindowLimits = anonymousWorkLimits, clock: Clock = systemClock) {
    super(limits, clock);
  }

  /** Counts one unit for the address: null when within budget, else the seconds until its window ends. */
  take(address: string): number | null {
    const retryAfter = this.retryAfter(address);
    if (retryAfter === null) this.count(address);
    return retryAfter;
  }
}
