import { adjustProviderTokens, takeProviderBudget } from '../../shared/db/queries/providerBudgets.ts';
import type { Db } from '../../shared/db/sql.ts';
import { type Clock, systemClock } from '../../shared/primitives/clock.ts';

const windowMs = 60_000;

/** What one call took from a provider's window, to settle once its real token count is known. */
export type BudgetTaken = { provider: string; windowStart: string; tokens: number };

/**
 * The upstream accounts' requests and tokens per minute (PROVIDERS `rpm`/`tpm`), spent in fixed
 * one-minute windows in PostgreSQL so every worker and web process draws on the same figure. A call
 * takes one request and its token estimate before it is sent; when either is spent the gateway
 * passes the entry by (callRoute), as the provider itself would refuse it with a 429. A provider
 * without a budget costs no database round trip.
 */
export class ProviderBudgets {
  private readonly db: Db;
  private readonly budgetOf: (provider: string) => { rpm: number | null; tpm: number | null };
  private readonly clock: Clock;

  constructor(
    db: Db,
    budgetOf: (provider: string) => { rpm: number | null; tpm: number | null },
    clock: Clock = systemClock,
  ) {
    this.db = db;
    this.budgetOf = budgetOf;
    this.clock = clock;
  }

  /** Takes a call's share: null when the provider has no budget, `spent` when this minute's is gone. */
  async take(provider: string, tokens: number): Promise<BudgetTaken | null | 'spent'> {
    const budget = this.budgetOf(provider);
    if (budget.rpm === null && budget.tpm === null) return null;
    const windowStart = new Date(Math.floor(this.clock() / windowMs) * windowMs).toISOString();
    const taken = await takeProviderBudget(this.db, provider, windowStart, tokens, budget);
    return taken ? { provider, windowStart, tokens } : 'spent';
  }

  /** Moves what a call took to the tokens the provider counted (its usage). */
  async settle(taken: BudgetTaken, used: number): Promise<void> {
    const delta = Math.round(used) - taken.tokens;
    if (delta !== 0) await adjustProviderTokens(this.db, taken.provider, taken.windowStart, delta);
  }
}
