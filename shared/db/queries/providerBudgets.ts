import { z } from 'zod';

import { type Db, noRows, sql } from '../sql.ts';

const requestsRow = z.object({ requests: z.number() });

/**
 * Takes one request and `tokens` from a provider account's window unless either would pass its
 * budget (null: no budget of that kind); false when refused (nothing is taken). One upsert, so the
 * check and the take are one step for every worker and web process.
 */
export async function takeProviderBudget(
  db: Db,
  provider: string,
  windowStart: string,
  tokens: number,
  budget: { rpm: number | null; tpm: number | null },
): Promise<boolean> {
  const taken = await db.maybeOneFirst(sql.prepared('provider_budget_take', requestsRow)`
    insert into provider_budget_windows as w (provider, window_start, requests, tokens)
    select ${provider}, ${windowStart}::timestamptz, 1, ${tokens}::bigint
    where 1 <= coalesce(${budget.rpm}::int, 1) and ${tokens}::bigint <= coalesce(${budget.tpm}::bigint, ${tokens}::bigint)
    on conflict (provider, window_start) do update
      set requests = w.requests + 1, tokens = w.tokens + excluded.tokens
      where w.requests + 1 <= coalesce(${budget.rpm}::int, w.requests + 1)
        and w.tokens + excluded.tokens <= coalesce(${budget.tpm}::bigint, w.tokens + excluded.tokens)
    returning w.requests
  `);
  return taken !== null;
}

/** Moves a window's tokens by `delta` (a call settled below its estimate gives the rest back). */
export async function adjustProviderTokens(db: Db, provider: string, windowStart: string, delta: number) {
  await db.query(sql.prepared('provider_budget_adjust', noRows)`
    update provider_budget_windows set tokens = greatest(0, tokens + ${delta}::bigint)
    where provider = ${provider} and window_start = ${windowStart}::timestamptz
  `);
}

export async function deleteOldProviderBudgetWindows(db: Db): Promise<void> {
  await db.query(
    sql.typeAlias(
      'void',
    )`delete from provider_budget_windows where window_start < now() - interval '10 minutes'`,
  );
}
