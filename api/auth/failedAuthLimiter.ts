import { AppError } from '../../shared/errors/appError.ts';
import { sha256 } from '../../shared/primitives/ids.ts';
import type { KeyCache } from './keyCache.ts';

const windowMs = 60_000;
// Addresses remembered at once; past this the oldest are forgotten (a flood from many addresses
// then costs at most one lookup per address per window, which the negative cache absorbs).
const maxAddresses = 100_000;

type Window = { startedAt: number; failures: number };

/**
 * Throttles failed authentications per client address, in this api process: once an address has
 * failed `perMinute` times in its current minute, its calls are refused with rate_limited before any
 * key lookup, unless they present a key this process already knows to be valid (a shared office
 * address must not lock out its working keys). Per process on purpose: it protects each process's
 * own database pool, and a shared counter would cost the database a write per failed call.
 */
export class FailedAuthLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly perMinute: number;
  private readonly now: () => number;

  constructor(perMinute: number, now: () => number = Date.now) {
    this.perMinute = perMinute;
    this.now = now;
  }

  /** @throws AppError rate_limited when `ip` used up its failures and the key is not a known valid one. */
  check(ip: string | undefined, authorization: string | undefined, keys: KeyCache): void {
    const window = this.windows.get(ip ?? '');
    if (!window || window.failures < this.perMinute) return;
    const elapsed = this.now() - window.startedAt;
    if (elapsed >= windowMs) return;
    const secret = /^Bearer\s+(svc_sk_\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (secret !== undefined && keys.knowsValid(sha256(secret))) return;
    const retryAfter = Math.max(1, Math.ceil((windowMs - elapsed) / 1000));
    throw new AppError(
      'rate_limited',
      `Too many failed authentications from this address; retry after ${retryAfter} s.`,
      { headers: { 'Retry-After': String(retryAfter) } },
    );
  }

  record(ip: string | undefined): void {
    const key = ip ?? '';
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || now - window.startedAt >= windowMs) {
      this.windows.delete(key);
      if (this.windows.size >= maxAddresses) {
        const oldest = this.windows.keys().next().value;
        if (oldest !== undefined) this.windows.delete(oldest);
      }
      window = { startedAt: now, failures: 0 };
      this.windows.set(key, window);
    }
    window.failures += 1;
  }
}
