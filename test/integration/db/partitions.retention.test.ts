import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { makeWorkerUtils } from 'graphile-worker';
import { z } from 'zod';

import {
  listWorkspaceMeteringRecords,
  sumWorkspaceUsage,
} from '../../../shared/db/queries/meteringRecords.ts';
import {
  createRequestLogPartitions,
  listFilteredRequestLogs,
} from '../../../shared/db/queries/requestLogs.ts';
import { sql } from '../../../shared/db/sql.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { enqueue } from '../../../shared/queue/enqueue.ts';
import { graphileLogger } from '../../../worker/graphileLogger.ts';
import { maintenancePrune } from '../../../worker/tasks/maintenance__prune.ts';
import { type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { runDueJobs, workerContextFor } from '../../helpers/workerContext.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => ({ t, tenant } = await contextWithTenant()));
afterAll(() => t.close());

const partitionRow = z.object({ name: z.string(), bound: z.string() });

/** The partitions of `table` and their bounds, as PostgreSQL prints them. */
const partitionsOf = (table: 'request_logs' | 'metering_records') =>
  t.deps.pool.any(sql.type(partitionRow)`
    select c.relname::text as name, pg_get_expr(c.relpartbound, c.oid) as bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${table}::regclass order by 1
  `);

/** `<table>_YYYY_MM` of the UTC month `offset` months from now. */
const monthPartition = (table: string, offset: number) =>
  t.deps.pool.oneFirst(sql.type(z.object({ name: z.string() }))`
    select ${table} || '_' || to_char(date_trunc('month', now() at time zone 'utc') + make_interval(months => ${offset}), 'YYYY_MM') as name
  `);

async function runMaintenance(): Promise<void> {
  await t.deps.pool.transaction((tx) => enqueue(tx, 'maintenance__prune', {}));
  await runDueJobs(t, { maintenance__prune: maintenancePrune(workerContextFor(t)) });
}

async function insertLog(requestId: string, age: string): Promise<void> {
  await t.deps.pool.query(sql.typeAlias('void')`
    insert into request_logs (request_id, workspace_id, method, path, status, latency_ms, created_at)
    values (${requestId}, ${tenant.workspaceId}, 'GET', '/api/pub/v1/me', 200, 1, now() - ${age}::interval)
  `);
}

const whereIs = (table: 'request_logs' | 'metering_records', column: 'request_id' | 'id', value: string) =>
  t.deps.pool.maybeOneFirst(sql.type(z.object({ part: z.string() }))`
    select tableoid::regclass::text as part from ${sql.identifier([table])} where ${sql.identifier([column])} = ${value}
  `);

describe('monthly partitions', () => {
  it('exist for this month and the next two from the migration on, with a default partition', async () => {
    for (const table of ['request_logs', 'metering_records'] as const) {
      const names = (await partitionsOf(table)).map((p) => p.name);
      for (const offset of [0, 1, 2]) expect(names).toContain(await monthPartition(table, offset));
      expect(names).toContain(`${table}_default`);
      const current = (await partitionsOf(table)).find((p) => p.name.endsWith('_default'));
      expect(current!.bound).toBe('DEFAULT');
    }
  });

  it('are created ahead by maintenance, which also moves rows out of the default partition', async () => {
    const ahead = await monthPartition('request_logs', 2);
    await t.deps.pool.query(sql.typeAlias('void')`drop table ${sql.identifier([ahead])}`);
    // Months no partition covers: the rows still go in (default partition), nothing fails.
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into request_logs (request_id, method, path, status, latency_ms, created_at)
      values ('part-ahead-1', 'GET', '/x', 200, 1, date_trunc('month', now()) + interval '2 months 3 days'),
             ('part-ahead-2', 'GET', '/x', 200, 1, date_trunc('month', now()) + interval '7 months')
    `);
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into metering_records (id, job_id, workspace_id, project_id, operation, livemode, cost_minor, currency, created_at)
      values ('mtr_part_old', 'job_part_old', ${tenant.workspaceId}, ${tenant.projectId}, 'text.generate', false, 0, 'USD',
              now() - interval '2 years')
    `);
    expect(await whereIs('request_logs', 'request_id', 'part-ahead-1')).toBe('request_logs_default');
    expect(await whereIs('metering_records', 'id', 'mtr_part_old')).toBe('metering_records_default');
    await runMaintenance();
    expect((await partitionsOf('request_logs')).map((p) => p.name)).toContain(ahead);
    expect(await whereIs('request_logs', 'request_id', 'part-ahead-1')).toBe(ahead);
    expect(await whereIs('request_logs', 'request_id', 'part-ahead-2')).toBe(
      await monthPartition('request_logs', 7),
    );
    // Billing records are never dropped: the old one moves to its own month.
    expect(await whereIs('metering_records', 'id', 'mtr_part_old')).toBe(
      await monthPartition('metering_records', -24),
    );
    const leftInDefault = await t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
      select ((select count(*) from request_logs_default) + (select count(*) from metering_records_default))::int as n
    `);
    expect(leftInDefault).toBe(0);
  });
});

describe('request log retention (30 days)', () => {
  it('drops whole partitions past retention and deletes older rows left in the others', async () => {
    await insertLog('ret-70d', '70 days');
    await insertLog('ret-40d', '40 days');
    await insertLog('ret-31d', '31 days');
    await insertLog('ret-29d', '29 days');
    await insertLog('ret-1d', '1 day');
    // Give the old rows their own month partitions first, as a database that has run for months has.
    const oldMonth = await t.deps.pool.oneFirst(sql.type(z.object({ name: z.string() }))`
      select create_month_partition('request_logs', (now() - interval '70 days')::date) as name
    `);
    await createRequestLogPartitions(t.deps.pool, 2);
    expect(await whereIs('request_logs', 'request_id', 'ret-70d')).toBe(oldMonth);
    await runMaintenance();
    const names = (await partitionsOf('request_logs')).map((p) => p.name);
    // The month of 70 days ago ended at least 39 days ago: dropped whole.
    expect(names).not.toContain(oldMonth);
    for (const gone of ['ret-70d', 'ret-40d', 'ret-31d']) {
      expect(await whereIs('request_logs', 'request_id', gone)).toBeNull();
    }
    for (const kept of ['ret-29d', 'ret-1d']) {
      expect(await whereIs('request_logs', 'request_id', kept)).not.toBeNull();
    }
    for (const offset of [0, 1, 2]) expect(names).toContain(await monthPartition('request_logs', offset));
  });
});

describe('maintenance when a step fails', () => {
  it('still runs the other steps when a partition drop times out on its lock, and drops it next time', async () => {
    await insertLog('lock-70d', '70 days');
    const oldMonth = await t.deps.pool.oneFirst(sql.type(z.object({ name: z.string() }))`
      select create_month_partition('request_logs', (now() - interval '70 days')::date) as name
    `);
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into events (id, workspace_id, type, data, created_at)
      values ('evt_lock_old', ${tenant.workspaceId}, 'job.succeeded', '{}', now() - interval '31 days')
    `);
    // A long read of the request log: dropping a partition must not wait on it past its lock_timeout.
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const reader = t.deps.pool.transaction(async (tx) => {
      await tx.query(sql.typeAlias('void')`lock table request_logs in access share mode`);
      locked();
      await new Promise<void>((resolve) => (release = resolve));
    });
    await isLocked;
    try {
      await runMaintenance();
    } finally {
      release();
      await reader;
    }
    expect((await partitionsOf('request_logs')).map((p) => p.name)).toContain(oldMonth);
    // The steps after it ran: the old row is deleted, the old event pruned.
    expect(await whereIs('request_logs', 'request_id', 'lock-70d')).toBeNull();
    const events = await t.deps.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
      select id from events where id = 'evt_lock_old'
    `);
    expect(events).toEqual([]);
    await runMaintenance();
    expect((await partitionsOf('request_logs')).map((p) => p.name)).not.toContain(oldMonth);
  });
});

describe('reads stay on one partition and page exactly by (created_at, id)', () => {
  it('pages a workspace log newest first, ties broken by id, without loss or repeat', async () => {
    const other = await createTenant(t.deps.pool);
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into request_logs (request_id, workspace_id, method, path, status, latency_ms, created_at)
      select 'page-' || n, ${other.workspaceId}, 'GET', '/x', 200, 1,
             date_trunc('second', now()) - make_interval(secs => n / 3) - make_interval(secs => 0.000001 * (n % 2))
      from generate_series(1, 25) n
    `);
    const seen: string[] = [];
    let before: { at: string; id: number } | undefined;
    for (;;) {
      const page = await listFilteredRequestLogs(
        t.deps.pool,
        other.workspaceId,
        {},
        {
          before,
          limit: 7,
          retentionDays: 30,
        },
      );
      if (page.length === 0) break;
      seen.push(...page.map((r) => r.request_id));
      const last = page.at(-1)!;
      before = { at: last.cursor_at, id: last.id };
    }
    expect(seen).toHaveLength(25);
    expect(new Set(seen).size).toBe(25);
    const ordered = await t.deps.pool.anyFirst(sql.type(z.object({ request_id: z.string() }))`
      select request_id from request_logs where workspace_id = ${other.workspaceId} order by created_at desc, id desc
    `);
    expect(seen).toEqual(ordered);
  });

  it("lists and sums a workspace's metering records of one month", async () => {
    const other = await createTenant(t.deps.pool);
    await t.deps.pool.query(sql.typeAlias('void')`
      insert into metering_records (id, job_id, workspace_id, project_id, operation, livemode, cost_minor, currency, created_at)
      select 'mtr_sum_' || n, 'job_sum_' || n, ${other.workspaceId}, ${other.projectId},
             case when n % 2 = 0 then 'text.generate' else 'images.generate' end, true, n, 'USD',
             date_trunc('month', now()) + make_interval(hours => n)
      from generate_series(1, 12) n
    `);
    const month = await t.deps.pool.oneFirst(sql.type(z.object({ m: z.string() }))`
      select to_char(now() at time zone 'utc', 'YYYY-MM') as m
    `);
    expect(await sumWorkspaceUsage(t.deps.pool, other.workspaceId, month)).toEqual([
      { operation: 'images.generate', calls: 6, cost_minor: 1 + 3 + 5 + 7 + 9 + 11 },
      { operation: 'text.generate', calls: 6, cost_minor: 2 + 4 + 6 + 8 + 10 + 12 },
    ]);
    const first = await listWorkspaceMeteringRecords(t.deps.pool, other.workspaceId, { month, limit: 5 });
    // Record n is n hours into the month: newest first is n from 12 down.
    const records = (from: number, to: number) =>
      Array.from({ length: from - to + 1 }, (_, i) => `mtr_sum_${from - i}`);
    expect(first.map((r) => r.id)).toEqual(records(12, 8));
    const second = await listWorkspaceMeteringRecords(t.deps.pool, other.workspaceId, {
      month,
      limit: 5,
      before: { at: first.at(-1)!.cursor_at, id: first.at(-1)!.id },
    });
    expect(second.map((r) => r.id)).toEqual(records(7, 3));
  });
});

describe('graphile-worker housekeeping', () => {
  it("removes job queues left without jobs through graphile-worker's cleanup", async () => {
    const utils = await makeWorkerUtils({
      connectionString: t.databaseUrl,
      logger: graphileLogger(createLogger('silent', 'test')),
    });
    try {
      const job = await utils.addJob('noop__task', {}, { queueName: 'housekeeping-queue' });
      await utils.completeJobs([job.id]);
    } finally {
      await utils.release();
    }
    const queues = () =>
      t.deps.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
        select count(*)::int as n from graphile_worker._private_job_queues where queue_name = 'housekeeping-queue'
      `);
    expect(await queues()).toBe(1);
    await runMaintenance();
    expect(await queues()).toBe(0);
  });
});
