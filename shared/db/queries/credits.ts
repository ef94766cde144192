import { z } from 'zod';

import { type Db, idRow, noRows, sql } from '../sql.ts';
import { workspaceRecord } from './workspaceRows.ts';

export type NewHold = {
  id: string;
  workspaceId: string;
  projectId: string;
  keyId: string | null;
  oauthAppId?: string | null;
  operation: string;
  maxMinor: number;
  /** The key's monthly spend cap; null: none. */
  capMinor: number | null;
  requestId: string | null;
};

const reservedRow = z.object({
  amount_minor: z.number(),
  refusal: z.enum(['insufficient_credits', 'key_spend_limit_reached']).nullable(),
});

/**
 * Reserves up to `maxMinor` in one statement (db/migrations/000038): locks the workspace's balance,
 * then the key's month, cuts the amount to what both have left and writes the hold, or refuses
 * writing nothing. The locks last until the caller's commit, so callers run it last.
 */
export function reserveCredit(db: Db, hold: NewHold) {
  return db.one(sql.prepared('credit_reserve', reservedRow)`
    select o_amount_minor as amount_minor, o_refusal as refusal
    from reserve_credit(${hold.id}, ${hold.workspaceId}, ${hold.projectId}, ${hold.keyId},
                        ${hold.oauthAppId ?? null}, ${hold.operation}, ${hold.maxMinor}, ${hold.capMinor},
                        ${hold.requestId})
  `);
}

/**
 * Writes a hold whose reservation happens when the transaction commits (db/migrations/000040): the
 * workspace's balance row and the key's month row are then locked inside COMMIT only, not from a
 * statement until the client's COMMIT arrives. The amount is cut or refused as reserveCredit would;
 * a refusal fails the commit with SQLSTATE SVC01 or SVC02 (see creditRefusalAtCommit).
 */
export async function insertHoldReservedAtCommit(db: Db, hold: NewHold): Promise<void> {
  await db.query(sql.prepared('credit_hold_insert_at_commit', noRows)`
    insert into credit_holds (id, workspace_id, project_id, key_id, oauth_app_id, operation, amount_minor,
                              month, request_id, reserve_at_commit, cap_minor)
    values (${hold.id}, ${hold.workspaceId}, ${hold.projectId}, ${hold.keyId}, ${hold.oauthAppId ?? null},
            ${hold.operation}, ${Math.max(1, hold.maxMinor)},
            (date_trunc('month', now() at time zone 'utc'))::date, ${hold.requestId}, true, ${hold.capMinor})
  `);
}

const holdRow = workspaceRecord.extend({
  key_id: z.string().nullable(),
  amount_minor: z.number(),
  month: z.string(),
  status: z.enum(['held', 'settled', 'released']),
});
export type HoldRow = z.infer<typeof holdRow>;

export function lockHold(db: Db, holdId: string) {
  return db.maybeOne(sql.prepared('credit_holds_lock', holdRow)`
    select id, workspace_id, key_id, amount_minor, month, status from credit_holds where id = ${holdId}
    for no key update
  `);
}

/**
 * Closes a held hold in one statement: false when it was no longer held. Its money moves when the
 * transaction commits (db/migrations/000040): the charge leaves the balance and the key's month, the
 * whole hold leaves reserved, under the workspace's row lock taken inside COMMIT.
 */
export async function closeHold(db: Db, holdId: string, chargeMinor: number, status: 'settled' | 'released') {
  return db.oneFirst(sql.prepared('credit_hold_close', z.object({ closed: z.boolean() }))`
    select close_credit_hold(${holdId}, ${chargeMinor}, ${status}) as closed
  `);
}

export type NewMeteringRecord = {
  id: string;
  holdId: string | null;
  jobId: string | null;
  workspaceId: string;
  projectId: string;
  keyId: string | null;
  operation: string;
  livemode: boolean;
  usage: Record<string, number>;
  costMinor: number;
  currency: string;
  requestId: string | null;
  /** The provider and model that answered (the route entry the call was priced at). */
  provider?: string | null;
  model?: string | null;
  /** The OAuth app of a call billed without a job (a cache hit); a job's record reads it from the job. */
  oauthAppId?: string | null;
};

/** Inserts the record unless one exists for the same job (a retried job must not meter twice). */
export function insertMeteringRecord(db: Db, r: NewMeteringRecord) {
  return db.maybeOne(sql.prepared('metering_records_insert', idRow)`
    insert into metering_records (id, hold_id, job_id, workspace_id, project_id, key_id, oauth_app_id, operation,
                                  livemode, usage, cost_minor, currency, request_id, provider, model)
    values (${r.id}, ${r.holdId}, ${r.jobId}, ${r.workspaceId}, ${r.projectId}, ${r.keyId},
            -- The app an OAuth call came through, as its job recorded it.
            coalesce(${r.oauthAppId ?? null}, (select j.oauth_app_id from jobs j where j.id = ${r.jobId})),
            ${r.operation},
            ${r.livemode}, ${sql.jsonb(r.usage)}, ${r.costMinor}, ${r.currency}, ${r.requestId},
            ${r.provider ?? null}, ${r.model ?? null})
    on conflict do nothing
    returning id
  `);
}

const balanceRow = z.object({ id: z.string(), balance_minor: z.number() });

export function addCredits(db: Db, workspaceId: string, amountMinor: number) {
  return db.maybeOne(sql.type(balanceRow)`
    update workspaces set balance_minor = balance_minor + ${amountMinor} where id = ${workspaceId}
    returning id, balance_minor
  `);
}
