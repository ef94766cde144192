import { z } from 'zod';

import { type Db, isoTimestamp, noRows, sql } from '../sql.ts';

const circuitRow = z.object({
  provider: z.string(),
  failures: z.number(),
  window_started_at: isoTimestamp.nullable(),
  open_until: isoTimestamp.nullable(),
  trial_until: isoTimestamp.nullable(),
  resting_until: isoTimestamp.nullable(),
});
export type CircuitRow = z.infer<typeof circuitRow>;

export type FailurePolicy = { failures: number; windowMs: number; cooldownMs: number };

export function listCircuits(db: Db) {
  return db.any(sql.prepared('provider_circuits_list', circuitRow)`
    select provider, failures, window_started_at, open_until, trial_until, resting_until from provider_circuits
  `);
}

/**
 * Counts a failure in one statement, so failures recorded at once by several processes all count.
 * A failure outside the window starts a new count; reaching `policy.failures`, or failing the
 * half-open trial, opens the circuit for the cooldown. `restUntil` (a Retry-After) only ever extends
 * the rest already asked for.
 */
export function recordCircuitFailure(
  db: Db,
  provider: string,
  at: Date,
  policy: FailurePolicy,
  restUntil: Date | null,
) {
  const now = at.toISOString();
  const windowStart = new Date(at.getTime() - policy.windowMs).toISOString();
  const openUntil = new Date(at.getTime() + policy.cooldownMs).toISOString();
  const rest = restUntil?.toISOString() ?? null;
  // The count so far is stale: its first failure is older than the window (or there is none).
  const fresh = sql.fragment`(c.window_started_at is null or c.window_started_at < ${windowStart}::timestamptz)`;
  return db.one(sql.type(circuitRow)`
    insert into provider_circuits as c (provider, failures, window_started_at, open_until, resting_until, updated_at)
    values (
      ${provider}, 1, ${now}::timestamptz,
      case when ${policy.failures}::int <= 1 then ${openUntil}::timestamptz end,
      ${rest}::timestamptz, ${now}::timestamptz
    )
    on conflict (provider) do update set
      failures = case when ${fresh} then 1 else c.failures + 1 end,
      window_started_at = case when ${fresh} then ${now}::timestamptz else c.window_started_at end,
      open_until = case
        when (case when ${fresh} then 1 else c.failures + 1 end) >= ${policy.failures}::int
          or c.trial_until is not null
        then ${openUntil}::timestamptz
        else c.open_until end,
      trial_until = null,
      resting_until = greatest(c.resting_until, excluded.resting_until),
      updated_at = excluded.updated_at
    returning c.provider, c.failures, c.window_started_at, c.open_until, c.trial_until, c.resting_until
  `);
}

/** A success closes the circuit; a provider with nothing to forget is not written to. */
export async function recordCircuitSuccess(db: Db, provider: string): Promise<void> {
  await db.query(sql.prepared('provider_circuit_success', noRows)`
    update provider_circuits
    set failures = 0, window_started_at = null, open_until = null, trial_until = null, updated_at = now()
    where provider = ${provider}
      and (failures > 0 or open_until is not null or trial_until is not null)
  `);
}

/**
 * Claims the half-open trial of a circuit whose cooldown has passed: true for exactly one caller
 * until `trialUntil`, so a fleet lets one call through, not one per process.
 */
export async function claimCircuitTrial(
  db: Db,
  provider: string,
  at: Date,
  trialUntil: Date,
): Promise<boolean> {
  const claimed = await db.maybeOneFirst(sql.prepared(
    'provider_circuit_trial',
    z.object({ provider: z.string() }),
  )`
    update provider_circuits set trial_until = ${trialUntil.toISOString()}::timestamptz
    where provider = ${provider}
      and open_until <= ${at.toISOString()}::timestamptz
      and (trial_until is null or trial_until <= ${at.toISOString()}::timestamptz)
    returning provider
  `);
  return claimed !== null;
}
