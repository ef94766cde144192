import {
  type CircuitRow,
  claimCircuitTrial,
  type FailurePolicy,
  listCircuits,
  recordCircuitFailure,
  recordCircuitSuccess,
} from '../db/queries/providerCircuits.ts';
import type { Db } from '../db/sql.ts';
import { type Clock, systemClock } from '../primitives/clock.ts';

export type CircuitState = 'closed' | 'open' | 'half-open' | 'resting';

/** A provider's policy: when its circuit opens, and how long a half-open trial may take. */
export type CircuitPolicy = FailurePolicy & { trialMs: number };

/** What a caller may do with a provider now: call it, call it as the one half-open trial, or skip it. */
export type Admission = 'call' | 'trial' | 'skip';

/**
 * A circuit as operators see it (DESIGN.md, `admin -- providers status`): a provider resting after a
 * Retry-After is reported open until its rest ends, since calls skip it all the same.
 */
export type CircuitStatus = {
  name: string;
  state: 'closed' | 'open' | 'half-open';
  failures: number;
  openUntil: string | null;
};

/** A circuit's state at `now` from its row (no row: closed). */
function hasSomethingToClear(row: CircuitRow | undefined): row is CircuitRow {
  return row !== undefined && (row.failures > 0 || row.open_until !== null || row.trial_until !== null);
}

export function circuitState(row: CircuitRow | undefined, now: number): CircuitState {
  if (row === undefined) return 'closed';
  if (row.resting_until !== null && Date.parse(row.resting_until) > now) return 'resting';
  if (row.open_until === null) return 'closed';
  return Date.parse(row.open_until) > now ? 'open' : 'half-open';
}

/**
 * Circuit breakers for the model gateway, kept in PostgreSQL so every worker process agrees. Reading
 * them is one small query cached for `cacheMs` per process (every call consults them); what this
 * process records updates its cache at once, and other processes see it within `cacheMs`.
 */
export class CircuitBreaker {
  private rows = new Map<string, CircuitRow>();
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | undefined;
  /** Rows this process wrote while a read was in flight: that read may predate them. */
  private writtenDuringRead = new Map<string, CircuitRow>();
  private readonly clock: Clock;
  private readonly cacheMs: number;
  private readonly db: Db;
  private readonly policyOf: (provider: string) => CircuitPolicy;

  constructor(
    db: Db,
    policyOf: (provider: string) => CircuitPolicy,
    options: { clock?: Clock; cacheMs?: number } = {},
  ) {
    this.db = db;
    this.policyOf = policyOf;
    this.clock = options.clock ?? systemClock;
    this.cacheMs = options.cacheMs ?? 2000;
  }

  async admit(provider: string): Promise<Admission> {
    await this.fresh();
    const now = this.clock();
    const state = circuitState(this.rows.get(provider), now);
    if (state === 'closed') return 'call';
    if (state !== 'half-open') return 'skip';
    const trialUntil = new Date(now + this.policyOf(provider).trialMs);
    if (!(await claimCircuitTrial(this.db, provider, new Date(now), trialUntil))) return 'skip';
    const row = this.rows.get(provider);
    if (row) this.remember({ ...row, trial_until: trialUntil.toISOString() });
    return 'trial';
  }

  /** Counts a retryable failure; `retryAfterMs` (the provider's Retry-After) rests it that long. */
  async failed(provider: string, retryAfterMs?: number): Promise<CircuitState> {
    const now = this.clock();
    const rest = retryAfterMs === undefined ? null : new Date(now + retryAfterMs);
    const row = await recordCircuitFailure(this.db, provider, new Date(now), this.policyOf(provider), rest);
    this.remember(row);
    return circuitState(row, now);
  }

  /**
   * Clears a provider's failures and open state. Written only when this process's view (at most
   * `cacheMs` old) shows something to clear: a write on every success was a round trip on every
   * model call (the gateway's largest cost). Failures another process recorded within that window
   * and this one has not read yet are then cleared by the next success after it reads them.
   */
  async succeeded(provider: string): Promise<void> {
    await this.fresh();
    const row = this.rows.get(provider);
    if (!hasSomethingToClear(row)) return;
    await recordCircuitSuccess(this.db, provider);
    // A rest the provider asked for still stands: only the failure count and the open state go.
    this.remember({
      ...row,
      failures: 0,
      window_started_at: null,
      open_until: null,
      trial_until: null,
    });
  }

  /** Every named provider's circuit now, read afresh (for operators and metrics). */
  async status(providers: string[]): Promise<CircuitStatus[]> {
    this.readAt = Number.NEGATIVE_INFINITY;
    await this.fresh();
    const now = this.clock();
    return providers.map((name) => {
      const row = this.rows.get(name);
      const state = circuitState(row, now);
      const resting = state === 'resting';
      return {
        name,
        state: resting ? 'open' : state,
        failures: row?.failures ?? 0,
        openUntil: resting ? row!.resting_until : state === 'closed' ? null : row!.open_until,
      };
    });
  }

  private remember(row: CircuitRow): void {
    this.rows.set(row.provider, row);
    if (this.reading) this.writtenDuringRead.set(row.provider, row);
  }

  private fresh(): Promise<void> {
    if (this.clock() - this.readAt < this.cacheMs) return Promise.resolve();
    // Calls arriving while a read is in flight share it. What this process wrote meanwhile wins
    // over the read: a snapshot taken before a circuit opened here would otherwise close it again
    // in this process for a whole `cacheMs`.
    this.reading ??= listCircuits(this.db)
      .then((rows) => {
        this.rows = new Map(rows.map((row) => [row.provider, row]));
        for (const row of this.writtenDuringRead.values()) this.rows.set(row.provider, row);
        this.readAt = this.clock();
      })
      .finally(() => {
        this.writtenDuringRead.clear();
        this.reading = undefined;
      });
    return this.reading;
  }
}
