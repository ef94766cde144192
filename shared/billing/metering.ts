import type { Principal } from '../auth/principal.ts';
import {
  closeHold,
  insertHoldReservedAtCommit,
  insertMeteringRecord,
  lockHold,
  type NewHold,
  type NewMeteringRecord,
  reserveCredit,
} from '../db/queries/credits.ts';
import { type Db } from '../db/sql.ts';
import { AppError } from '../errors/appError.ts';
import { newId } from '../primitives/ids.ts';

/** The parts of a principal that reserving credit reads. */
export type Payer = Pick<Principal, 'livemode' | 'workspaceId' | 'keyId' | 'monthlySpendCapMinor'> &
  Partial<Pick<Principal, 'oauthAppId'>>;

export type Reservation = { holdId: string; amountMinor: number } | null;

const refusals = {
  insufficient_credits: () =>
    new AppError('insufficient_credits', 'The workspace credit balance is used up; add credits and retry.'),
  key_spend_limit_reached: () =>
    new AppError('key_spend_limit_reached', 'This key has reached its monthly spend cap.'),
} as const;

/** What a reservation asks for. */
type HoldRequest = {
  /** Who pays: the credential's workspace, key and cap (a worker may rebuild these from a job). */
  principal: Payer;
  projectId: string;
  operation: string;
  maxCostMinor: number;
  requestId: string;
};

/** The hold a request asks for, under `id`: at most the maximum cost (whole minor units), the key's cap. */
function holdOf(input: HoldRequest, id: string): NewHold {
  const { principal } = input;
  return {
    id,
    workspaceId: principal.workspaceId,
    projectId: input.projectId,
    keyId: principal.keyId,
    oauthAppId: principal.oauthAppId ?? null,
    operation: input.operation,
    maxMinor: Math.ceil(input.maxCostMinor),
    capMinor: principal.keyId === null ? null : principal.monthlySpendCapMinor,
    requestId: input.requestId,
  };
}

/**
 * Reserves up to `maxCostMinor` for a billed call, in the transaction that also creates the job, as
 * its LAST statement: the workspace's balance row, then the key's month row, are locked until the
 * commit, so concurrent calls serialize and can never hold more than the balance or the key's cap.
 * `holdId` may be minted beforehand (newId('hold')) so the job naming it is written first. Test keys
 * spend nothing and reserve nothing. A hold is cut to what remains when the balance or cap is lower
 * than the maximum cost: the final call that exhausts the credit is charged at most what was left.
 * @throws AppError insufficient_credits when the available balance is zero or below,
 *   key_spend_limit_reached when the key's monthly cap is used up.
 */
export async function reserveCredits(
  tx: Db,
  input: HoldRequest & { holdId?: string },
): Promise<Reservation> {
  if (!input.principal.livemode) return null;
  const holdId = input.holdId ?? newId('hold');
  const reserved = await reserveCredit(tx, holdOf(input, holdId));
  if (reserved.refusal !== null) throw refusals[reserved.refusal]();
  return { holdId, amountMinor: reserved.amount_minor };
}

/**
 * reserveCredits for the api's hot path: the hold is written now and reserved as its transaction
 * commits (db/migrations/000040), so the workspace's and the key's rows, which every live call of
 * them shares, are locked inside COMMIT only. Same cut, same refusals, which fail the commit: the
 * caller turns them back into AppErrors with creditRefusalAtCommit. Returns the hold's id; null for
 * a test key, which reserves nothing.
 */
export async function reserveCreditsAtCommit(
  tx: Db,
  input: HoldRequest & { holdId: string },
): Promise<string | null> {
  if (!input.principal.livemode) return null;
  await insertHoldReservedAtCommit(tx, holdOf(input, input.holdId));
  return input.holdId;
}

/** The AppError a commit refused by a reservation at commit stands for (SQLSTATE SVC01, SVC02). */
export function creditRefusalAtCommit(error: unknown): AppError | undefined {
  for (let e = error, depth = 0; e !== null && typeof e === 'object' && depth < 4; depth++) {
    const { code, cause } = e as { code?: unknown; cause?: unknown };
    if (code === 'SVC01') return refusals.insufficient_credits();
    if (code === 'SVC02') return refusals.key_spend_limit_reached();
    e = cause;
  }
  return undefined;
}

/** A finished call to bill: its metering record, for one job (the record's id is minted here). */
export type Settlement = Omit<NewMeteringRecord, 'id' | 'jobId'> & { jobId: string };

/** A metered call's charge, and the closing of its hold that moves the money (`settle`). */
export type Metered = { charge: number; settle(): Promise<void> };

/**
 * Charges the actual cost (at most the hold) and writes the metering record, exactly once per job:
 * a second call for the same hold or job changes nothing and returns the charge already made.
 * Run inside the transaction that completes the job.
 */
export async function settleUsage(tx: Db, s: Settlement): Promise<number> {
  const metered = await meterUsage(tx, s);
  await metered.settle();
  return metered.charge;
}

/**
 * settleUsage in two steps: the hold is read (its row locked) and the metering record written now;
 * `settle` closes the hold, moving the charge out of the workspace's balance and the key's month.
 * The caller runs `settle` last in its transaction: the workspace row is every live call's shared
 * lock (reservations queue behind it), so it is taken for the last statements before the commit
 * only, not across the job's other writes, each a round trip on a busy event loop.
 */
export async function meterUsage(tx: Db, s: Settlement): Promise<Metered> {
  let charge = s.livemode ? Math.max(1, Math.ceil(s.costMinor)) : 0;
  let settle = async () => {};
  if (s.holdId !== null) {
    const hold = await lockHold(tx, s.holdId);
    if (!hold || hold.status !== 'held') return { charge, settle };
    charge = Math.min(charge, hold.amount_minor);
    const closing = charge;
    settle = async () => {
      await closeHold(tx, hold.id, closing, 'settled');
    };
  }
  await insertMeteringRecord(tx, {
    id: newId('mtr'),
    holdId: s.holdId,
    jobId: s.jobId,
    workspaceId: s.workspaceId,
    projectId: s.projectId,
    keyId: s.keyId,
    operation: s.operation,
    livemode: s.livemode,
    usage: s.usage,
    costMinor: charge,
    currency: s.currency,
    requestId: s.requestId,
    provider: s.provider,
    model: s.model,
  });
  return { charge, settle };
}

/**
 * Returns a hold's whole amount to the balance (the work failed or never ran). Idempotent: true only
 * for the call that released it.
 */
export async function releaseHold(tx: Db, holdId: string): Promise<boolean> {
  return closeHold(tx, holdId, 0, 'released');
}
