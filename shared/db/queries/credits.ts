import { z } from 'zod';

import { type Db, idRow, noRows, sql } from '../sql.ts';
import { workspaceRecord } from './workspaceRows.ts';

const month = sql.fragment`(date_trunc('month', now() at time zone 'utc'))::date`;

const lockedBalanceRow = z.object({
  balance_minor: z.number(),
  reserved_minor: z.number(),
  currency: z.string(),
});

export function lockWorkspaceBalance(db: Db, workspaceId: string) {
  return db.one(sql.prepared('workspaces_lock_balance', lockedBalanceRow)`
    select balance_minor, reserved_minor, currency from workspaces where id = ${workspaceId}
    for no key update
  `);
}

const keyMonthRow = z.object({ month: z.string(), spent_minor: z.number(), reserved_minor: z.number() });

/** Locks (creating when absent) the key's row for the current UTC calendar month. */
export async function lockKeyMonth(db: Db, keyId: string) {
  await db.query(sql.prepared('key_monthly_spend_open', noRows)`
    insert into key_monthly_spend (key_id, month) values (${keyId}, ${month}) on conflict do nothing
  `);
  return db.one(sql.prepared('key_monthly_spend_lock', keyMonthRow)`
    select month, spent_minor, reserved_minor from key_monthly_spend
    where key_id = ${keyId} and month = ${month} for update
  `);
}

export type NewHold = {
  id: string;
  workspaceId: string;
  projectId: string;
  keyId: string | null;
  oauthAppId?: string | null;
  operation: string;
  amountMinor: number;
  month: string;
  requestId: string | null;
};

export async function insertHold(db: Db, hold: NewHold): Promise<void> {
  await db.query(sql.prepared('workspaces_reserve', noRows)`
    update workspaces set reserved_minor = reserved_minor + ${hold.amountMinor} where id = ${hold.workspaceId}
  `);
  if (hold.keyId !== null) {
    await db.query(sql.prepared('key_monthly_spend_reserve', noRows)`
      update key_monthly_spend set reserved_minor = reserved_minor + ${hold.amountMinor}
      where key_id = ${hold.keyId} and month = ${hold.month}::date
    `);
  }
  await db.query(sql.prepared('credit_holds_insert', noRows)`
    insert into credit_holds (id, workspace_id, project_id, key_id, oauth_app_id, operation, amount_minor, month,
                              request_id)
    values (${hold.id}, ${hold.workspaceId}, ${hold.projectId}, ${hold.keyId}, ${hold.oauthAppId ?? null},
            ${hold.operation}, ${hold.amountMinor}, ${hold.month}::date, ${hold.requestId})
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
 * Closes a held hold: the charge leaves the balance and the key's month, the whole hold leaves
 * reserved. The hold's row first, the workspace's last: the workspace row is the lock every live
 * call of the workspace shares, and it is taken before the key's month as a reservation takes them.
 */
export async function closeHold(db: Db, hold: HoldRow, chargeMinor: number, status: 'settled' | 'released') {
  await db.query(sql.prepared('credit_holds_close', noRows)`
    update credit_holds set status = ${status}, closed_at = now() where id = ${hold.id}
  `);
  await db.query(sql.prepared('workspaces_settle', noRows)`
    update workspaces
    set balance_minor = balance_minor - ${chargeMinor}, reserved_minor = reserved_minor - ${hold.amount_minor}
    where id = ${hold.workspace_id}
  `);
  if (hold.key_id !== null) {
    await db.query(sql.prepared('key_monthly_spend_settle', noRows)`
      update key_monthly_spend
      set spent_minor = spent_minor + ${chargeMinor}, reserved_minor = reserved_minor - ${hold.amount_minor}
      where key_id = ${hold.key_id} and month = ${hold.month}::date
    `);
  }
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
