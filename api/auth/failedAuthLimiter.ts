import { AppError } from '../../shared/errors/appError.ts';
import { AddressWindows } from '../../shared/primitives/addressWindows.ts';
import { type Clock, systemClock } from '../../shared/primitives/clock.ts';
import { sha256 } from '../../shared/primitives/ids.ts';
import type { KeyCache } from './keyCache.ts';

// Addresses remembered at once; past this the oldest are forgotten (a flood from many addresses
// then costs at most one lookup per address per window, which the negative cache absorbs).
const maxAddresses = 100_000;

/**
 * Throttles failed authentications per client address, in this api process: once an address has
 * failed `perMinute` times in its current minute, its calls are refused with rate_limited before any
 * key lookup, unless they present a key this process already knows to be valid (a shared office
 * address must not lock out its working keys). Per process on purpose: it protects each process's
 * own database pool, and a shared counter would cost the database a write per failed call.
 */
export class FailedAuthLimiter {
  private readonly failures: AddressWindows;

  constructor(perMinute: number, clock: Clock = systemClock) {
    this.failures = new AddressWindows({ perWindow: perMinute, windowMs: 60_000, maxAddresses }, clock);
  }

  /** @throws AppError rate_limited when `ip` used up its failures and the key is not a known valid one. */
  check(ip: string | undefined, authorization: string | undefined, keys: KeyCache): void {
    const retryAfter = this.failures.retryAfter(ip ?? '');
    if (retryAfter === null) return;
    const secret = /^Bearer\s+(svc_sk_\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (secret !== undefined && keys.knowsValid(sha256(secret))) return;
    throw new AppError(
      'rate_limited',
      `Too many failed authentications from this address; retry after ${retryAfter} s.`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  record(ip: string | undefined): void {
    this.failures.count(ip ?? '');
  }
}
