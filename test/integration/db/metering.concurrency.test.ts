import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import type { Principal } from '../../../shared/auth/principal.ts';
import {
  creditRefusalAtCommit,
  reserveCredits,
  reserveCreditsAtCommit,
  settleUsage,
} from '../../../shared/billing/metering.ts';
import { findWorkspaceBalance } from '../../../shared/db/queries/workspaces.ts';
import { type Db, sql } from '../../../shared/db/sql.ts';
import { AppError } from '../../../shared/errors/appError.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { waitForLockWaiters } from '../../helpers/locks.ts';

let t: TestContext;

beforeAll(async () => {
  t = await setupTestContext({ DATABASE_POOL_SIZE: '20' });
});
afterAll(() => t.close());

function principalOf(tenant: Tenant, keyId: string, cap: number | null): Principal {
  return {
    credentialType: 'api_key',
    credentialId: keyId,
    keyId,
    oauthAppId: null,
    name: 'k',
    hint: '',
    workspaceId: tenant.workspaceId,
    currency: 'USD',
    memberId: tenant.memberId,
    livemode: true,
    scope: { level: 'app', packages: [], operations: [] },
    projects: [{ id: tenant.projectId, name: 'Main' }],
    monthlySpendCapMinor: cap,
    rateLimitPerMinute: null,
    createdAt: new Date().toISOString(),
    expiresAt: null,
  };
}

/**
 * Where a reservation takes the workspace's and key's row locks: at its statement (reserveCredits:
 * the worker, cache hits) or inside COMMIT (reserveCreditsAtCommit: the api's billed jobs).
 */
type ReserveAt = 'statement' | 'commit';

async function reserveIn(reserveAt: ReserveAt, principal: Principal, projectId: string, maxCost: number) {
  const input = { principal, projectId, operation: 'text.generate', maxCostMinor: maxCost, requestId: newId('req') };
  if (reserveAt === 'statement') {
    return (await t.deps.pool.transaction((tx) => reserveCredits(tx, input)))!.holdId;
  }
  const holdId = newId('hold');
  await t.deps.pool
    .transaction((tx) => reserveCreditsAtCommit(tx, { ...input, holdId }))
    .catch((error: unknown) => {
      throw creditRefusalAtCommit(error) ?? error;
    });
  return holdId;
}

/** One billed call: reserve in one transaction, settle the actual cost in another, as api and worker do. */
async function billedCall(
  principal: Principal,
  projectId: string,
  maxCost: number,
  actualCost: number,
  reserveAt: ReserveAt = 'statement',
) {
  try {
    const holdId = await reserveIn(reserveAt, principal, projectId, maxCost);
    await new Promise((r) => setTimeout(r, Math.random() * 20));
    await t.deps.pool.transaction((tx) =>
      settleUsage(tx, {
        holdId,
        jobId: newId('job'),
        workspaceId: principal.workspaceId,
        projectId,
        keyId: principal.keyId,
        operation: 'text.generate',
        livemode: true,
        usage: { outputTokens: 10 },
        costMinor: actualCost,
        currency: 'USD',
        requestId: null,
      }),
    );
    return 'ok';
  } catch (error) {
    if (error instanceof AppError) return error.code;
    throw error;
  }
}

const spentInWorkspace = (workspaceId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ s: z.number() }))`
    select coalesce(sum(cost_minor), 0) as s from metering_records where workspace_id = ${workspaceId}
  `);

const spentOnKey = (keyId: string) =>
  t.deps.pool.oneFirst(sql.type(z.object({ s: z.number() }))`
    select coalesce(sum(cost_minor), 0) as s from metering_records where key_id = ${keyId}
  `);

describe.each(['statement', 'commit'] as const)('concurrent billed calls, reserved at their %s', (reserveAt) => {
  it('50 parallel calls never spend past the workspace balance', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 120 });
    // A key per call: the workspace row is the only one the calls share, so its lock alone keeps
    // them apart (one key's month row would serialize them too, and hide a missing workspace lock).
    const keys = await Promise.all(Array.from({ length: 50 }, () => tenant.key()));
    const outcomes = await Promise.all(
      keys.map((key) => billedCall(principalOf(tenant, key.id, null), tenant.projectId, 5, 4, reserveAt)),
    );
    const balance = await findWorkspaceBalance(t.deps.pool, tenant.workspaceId);
    expect(balance!.balance_minor).toBeGreaterThanOrEqual(0);
    expect(balance!.reserved_minor).toBe(0);
    const charged = await spentInWorkspace(tenant.workspaceId);
    expect(charged).toBe(120 - balance!.balance_minor);
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThanOrEqual(24);
    expect(outcomes.every((o) => o === 'ok' || o === 'insufficient_credits')).toBe(true);
    expect(outcomes).toContain('insufficient_credits');
  });

  it("50 parallel calls never spend past a key's monthly cap", async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 10_000 });
    const key = await tenant.key({ monthlySpendCapMinor: 60 });
    const principal = principalOf(tenant, key.id, 60);
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () => billedCall(principal, tenant.projectId, 5, 5, reserveAt)),
    );
    expect(await spentOnKey(key.id)).toBe(60);
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(12);
    expect(outcomes.filter((o) => o === 'key_spend_limit_reached')).toHaveLength(38);
    const month = await t.deps.pool.one(sql.type(
      z.object({ spent_minor: z.number(), reserved_minor: z.number() }),
    )`
      select spent_minor, reserved_minor from key_monthly_spend where key_id = ${key.id}
    `);
    expect(month).toEqual({ spent_minor: 60, reserved_minor: 0 });
    expect((await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!.balance_minor).toBe(10_000 - 60);
  });

  it('answers insufficient_credits at zero balance, and key_spend_limit_reached only when credit remains', async () => {
    const broke = await createTenant(t.deps.pool, { credits: 0 });
    const key = await broke.key({ monthlySpendCapMinor: 0 });
    expect(await billedCall(principalOf(broke, key.id, 0), broke.projectId, 5, 5, reserveAt)).toBe(
      'insufficient_credits',
    );
    const rich = await createTenant(t.deps.pool, { credits: 50 });
    const capped = await rich.key({ monthlySpendCapMinor: 0 });
    expect(await billedCall(principalOf(rich, capped.id, 0), rich.projectId, 5, 5, reserveAt)).toBe(
      'key_spend_limit_reached',
    );
    // A refused reservation leaves no hold behind.
    const holds = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select count(*)::int as n from credit_holds where workspace_id in (${broke.workspaceId}, ${rich.workspaceId})
    `);
    expect(holds).toBe(0);
  });

});

describe('billed calls, reserved at their statement', () => {
  it('a reservation made while another is uncommitted counts it: never more held than the balance', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 100 });
    const [first, second] = [await tenant.key(), await tenant.key()];
    const reserve = (tx: Db, keyId: string) =>
      reserveCredits(tx, {
        principal: principalOf(tenant, keyId, null),
        projectId: tenant.projectId,
        operation: 'text.generate',
        maxCostMinor: 100,
        requestId: newId('req'),
      });
    // The first call reserves the whole balance and holds its transaction open until the second
    // call, started after that reservation, waits on a lock; then it commits. The second call must
    // count the first's hold (it waits for the workspace row before reading the balance).
    let commitFirst!: () => void;
    let firstReserved!: () => void;
    const reserved = new Promise<void>((resolve) => (firstReserved = resolve));
    const firstHold = t.deps.pool.transaction(async (tx) => {
      const hold = await reserve(tx, first.id);
      firstReserved();
      await new Promise<void>((resolve) => (commitFirst = resolve));
      return hold;
    });
    await reserved;
    const secondHold = t.deps.pool
      .transaction((tx) => reserve(tx, second.id))
      .catch((error: unknown) => (error instanceof AppError ? error.code : Promise.reject(error)));
    await waitForLockWaiters(t.deps.pool, 1);
    commitFirst();
    const holds = [await firstHold, await secondHold];
    const held = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(held.reserved_minor).toBeLessThanOrEqual(held.balance_minor);
    // Each hold that was made is spent in full: what was charged never passes the credit.
    for (const [i, hold] of holds.entries()) {
      if (typeof hold !== 'object' || hold === null) continue;
      await t.deps.pool.transaction((tx) =>
        settleUsage(tx, {
          holdId: hold.holdId,
          jobId: newId('job'),
          workspaceId: tenant.workspaceId,
          projectId: tenant.projectId,
          keyId: [first, second][i]!.id,
          operation: 'text.generate',
          livemode: true,
          usage: { outputTokens: 100 },
          costMinor: 100,
          currency: 'USD',
          requestId: null,
        }),
      );
    }
    const settled = (await findWorkspaceBalance(t.deps.pool, tenant.workspaceId))!;
    expect(settled.balance_minor).toBeGreaterThanOrEqual(0);
    expect(await spentInWorkspace(tenant.workspaceId)).toBeLessThanOrEqual(100);
    expect(holds[0]).toEqual({ holdId: expect.any(String), amountMinor: 100 });
    expect(holds[1]).toBe('insufficient_credits');
  });

  it('settling the same hold twice bills once', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 100 });
    const key = await tenant.key();
    const principal = principalOf(tenant, key.id, null);
    const hold = await t.deps.pool.transaction((tx) =>
      reserveCredits(tx, {
        principal,
        projectId: tenant.projectId,
        operation: 'images.generate',
        maxCostMinor: 30,
        requestId: 'r',
      }),
    );
    const settle = () =>
      t.deps.pool.transaction((tx) =>
        settleUsage(tx, {
          holdId: hold!.holdId,
          jobId: 'job_same',
          workspaceId: tenant.workspaceId,
          projectId: tenant.projectId,
          keyId: key.id,
          operation: 'images.generate',
          livemode: true,
          usage: { images: 1 },
          costMinor: 20,
          currency: 'USD',
          requestId: null,
        }),
      );
    await Promise.all([settle(), settle(), settle()]);
    expect(await findWorkspaceBalance(t.deps.pool, tenant.workspaceId)).toMatchObject({
      balance_minor: 80,
      reserved_minor: 0,
    });
    expect(await spentOnKey(key.id)).toBe(20);
  });

  it('bills a job once even when its records would fall in different monthly partitions, all at once', async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 100 });
    // Twelve writers of a record for the same job, each dated in another month (some months have no
    // partition: the default one takes them). Each holds its transaction open a moment, so they overlap.
    const attempt = (n: number, jobId: string | null, holdId: string | null) =>
      t.deps.pool.transaction(async (tx) => {
        const id = await tx.maybeOneFirst(sql.type(z.object({ id: z.string() }))`
          insert into metering_records (id, job_id, hold_id, workspace_id, project_id, operation, livemode,
                                        cost_minor, currency, created_at)
          values (${newId('mtr')}, ${jobId}, ${holdId}, ${tenant.workspaceId}, ${tenant.projectId}, 'text.generate',
                  true, 5, 'USD', now() - make_interval(months => ${n}))
          on conflict do nothing
          returning id
        `);
        await tx.query(sql.typeAlias('void')`select from pg_sleep(0.05)`);
        return id;
      });
    const byJob = await Promise.all(
      Array.from({ length: 12 }, (_, n) => attempt(n, 'job_across_months', null)),
    );
    expect(byJob.filter((id) => id !== null)).toHaveLength(1);
    const key = await tenant.key();
    const hold = await t.deps.pool.transaction((tx) =>
      reserveCredits(tx, {
        principal: principalOf(tenant, key.id, null),
        projectId: tenant.projectId,
        operation: 'text.generate',
        maxCostMinor: 5,
        requestId: 'r',
      }),
    );
    const byHold = await Promise.all(
      Array.from({ length: 12 }, (_, n) => attempt(n, `job_hold_${n}`, hold!.holdId)),
    );
    expect(byHold.filter((id) => id !== null)).toHaveLength(1);
    const counts = await t.deps.pool.one(sql.type(z.object({ jobs: z.number(), holds: z.number() }))`
      select count(*) filter (where job_id = 'job_across_months')::int as jobs,
             count(*) filter (where hold_id = ${hold!.holdId})::int as holds
      from metering_records
    `);
    expect(counts).toEqual({ jobs: 1, holds: 1 });
  });

  it("refuses to move a metering record's job to another", async () => {
    const tenant = await createTenant(t.deps.pool, { credits: 100 });
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into metering_records (id, job_id, workspace_id, project_id, operation, livemode, cost_minor, currency)
      values ('mtr_fixed_job', 'job_fixed', ${tenant.workspaceId}, ${tenant.projectId}, 'text.generate', false, 0, 'USD')
    `);
    await expect(
      t.deps.pool.query(
        sql.typeAlias('void')`update metering_records set job_id = 'job_other' where id = 'mtr_fixed_job'`,
      ),
    ).rejects.toThrow();
  });
});
