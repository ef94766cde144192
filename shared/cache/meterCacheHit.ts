import type { Principal } from '../auth/principal.ts';
import { reserveCredits } from '../billing/metering.ts';
import { closeHold, insertMeteringRecord } from '../db/queries/credits.ts';
import type { DatabasePool, Db } from '../db/sql.ts';
import { newId } from '../primitives/ids.ts';

export type CacheHit = {
  principal: Principal;
  projectId: string;
  operation: string;
  /** PRICES.cacheHitPerCall: minor units, rounded up. */
  priceMinor: number;
  requestId: string;
  /** The model whose answer was cached, as the answer names it. */
  model: string | null;
};

/**
 * Meters a call answered from the response cache: one metering record with usage `{ cacheHits: 1 }`
 * at the cache price, under the call's request id (so the request log shows what it charged). At
 * price 0 (the default) nothing is reserved and nothing leaves the balance; above it the charge is
 * reserved and settled in one transaction, so a hit can never spend past the balance or the key's
 * cap. Returns the charge.
 * @throws AppError insufficient_credits / key_spend_limit_reached when a priced hit cannot be paid.
 */
export async function meterCacheHit(pool: DatabasePool, hit: CacheHit): Promise<number> {
  const { principal } = hit;
  const record = (db: Db, holdId: string | null, costMinor: number) =>
    insertMeteringRecord(db, {
      id: newId('mtr'),
      holdId,
      jobId: null,
      workspaceId: principal.workspaceId,
      projectId: hit.projectId,
      keyId: principal.keyId,
      oauthAppId: principal.oauthAppId,
      operation: hit.operation,
      livemode: principal.livemode,
      usage: { cacheHits: 1 },
      costMinor,
      currency: principal.currency,
      requestId: hit.requestId,
      provider: null,
      model: hit.model,
    });
  const price = Math.ceil(hit.priceMinor);
  if (!principal.livemode || price <= 0) {
    await record(pool, null, 0);
    return 0;
  }
  return pool.transaction(async (tx) => {
    const reservation = (await reserveCredits(tx, {
      principal,
      projectId: hit.projectId,
      operation: hit.operation,
      maxCostMinor: price,
      requestId: hit.requestId,
    }))!;
    // The hold is cut to what the balance or cap had left: the last hit pays at most that.
    const charge = Math.min(price, reservation.amountMinor);
    await closeHold(tx, reservation.holdId, charge, 'settled');
    await record(tx, reservation.holdId, charge);
    return charge;
  });
}
