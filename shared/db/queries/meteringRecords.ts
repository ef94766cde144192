import { z } from 'zod';

import { columnsOf, type Db, isoTimestamp, sql } from '../sql.ts';
import { cursorAt, cursorAtText, newestFirst } from './listPage.ts';

// Inserting a metering record lives with the money it settles (credits.ts, jobs.ts); these are the
// partitions and the reads.

const partitionName = z.object({ name: z.string() });

/**
 * Creates the metering records' partitions for this month and `monthsAhead` after it, and for any
 * month with rows waiting in the default partition (moved into it). Metering records are billing
 * records: nothing drops them. Returns the names created.
 * @throws the database error, lock_timeout (55P03) included.
 */
export function createMeteringPartitions(db: Db, monthsAhead: number) {
  return db.anyFirst(sql.type(partitionName)`
    select name from create_month_partitions('metering_records', ${monthsAhead}) as name
  `);
}

/** `YYYY-MM` (UTC calendar month) → its first instant, as SQL. */
const monthStart = (month: string) => sql.fragment`((${month} || '-01')::timestamp at time zone 'utc')`;

/** Where a page of metering records ends: the last row's (created_at, id), exact to the microsecond. */
export type MeteringCursor = { at: string; id: string };

/** A metering record as it is read back: what was billed, to whom, and for which call. */
export const meteringRecord = z.object({
  id: z.string(),
  job_id: z.string().nullable(),
  project_id: z.string(),
  key_id: z.string().nullable(),
  operation: z.string(),
  livemode: z.boolean(),
  usage: z.record(z.string(), z.number()),
  cost_minor: z.number(),
  currency: z.string(),
  request_id: z.string().nullable(),
  created_at: isoTimestamp,
  oauth_app_id: z.string().nullable(),
  /** The provider and model that answered (null for work no provider did: OCR, test keys' fixtures). */
  provider: z.string().nullable(),
  model: z.string().nullable(),
});

const recordColumns = columnsOf(meteringRecord);
const meteringRow = meteringRecord.extend({ cursor_at: cursorAtText });

/**
 * A workspace's metering records of one UTC month (`YYYY-MM`), newest first, one page after `before`:
 * one partition, read through metering_records_workspace_idx.
 */
export function listWorkspaceMeteringRecords(
  db: Db,
  workspaceId: string,
  page: { month: string; before?: MeteringCursor; limit: number },
) {
  const after = page.before
    ? sql.fragment`and created_at <= ${page.before.at}::timestamptz
                   and (created_at, id) < (${page.before.at}::timestamptz, ${page.before.id})`
    : sql.fragment``;
  return db.any(sql.type(meteringRow)`
    select ${recordColumns}, ${cursorAt()}
    from metering_records
    where workspace_id = ${workspaceId}
      and created_at >= ${monthStart(page.month)}
      and created_at < ${monthStart(page.month)} + interval '1 month'
      ${after}
    ${newestFirst(page)}
  `);
}

const usageRow = z.object({ operation: z.string(), calls: z.number(), cost_minor: z.number() });

/** What a workspace used and paid in one UTC month (`YYYY-MM`), per operation: one partition. */
export function sumWorkspaceUsage(db: Db, workspaceId: string, month: string) {
  return db.any(sql.type(usageRow)`
    select operation, count(*) as calls, coalesce(sum(cost_minor), 0) as cost_minor
    from metering_records
    where workspace_id = ${workspaceId}
      and created_at >= ${monthStart(month)}
      and created_at < ${monthStart(month)} + interval '1 month'
    group by operation
    order by operation
  `);
}

/** How the console splits spend: each is a column of the metering record. */
export type SpendSplit = 'project' | 'key' | 'app' | 'operation';
const splitColumn: Record<SpendSplit, string> = {
  project: 'project_id',
  key: 'key_id',
  app: 'oauth_app_id',
  operation: 'operation',
};

const dailySpendRow = z.object({ day: z.string(), part: z.string().nullable(), cost_minor: z.number() });

/**
 * Spend per UTC day of the last `days` days, split by one column: a range scan of
 * metering_records_workspace_idx over at most four monthly partitions.
 */
export function sumDailySpend(db: Db, workspaceId: string, split: SpendSplit, days: number) {
  const column = sql.identifier([splitColumn[split]]);
  return db.any(sql.type(dailySpendRow)`
    select to_char(created_at at time zone 'utc', 'YYYY-MM-DD') as day, ${column}::text as part,
           sum(cost_minor) as cost_minor
    from metering_records
    where workspace_id = ${workspaceId}
      and created_at >= date_trunc('day', now() at time zone 'utc') at time zone 'utc' - make_interval(days => ${days - 1})
    group by 1, 2
    order by 1, 2
  `);
}

/**
 * The records behind the console's chart: one UTC day (or the whole window), optionally one part of
 * the split, newest first, a page after `before`.
 */
export function listSpendRecords(
  db: Db,
  workspaceId: string,
  q: { from: string; to: string; split?: SpendSplit; part?: string; before?: MeteringCursor; limit: number },
) {
  const parts = [
    sql.fragment`workspace_id = ${workspaceId}`,
    sql.fragment`created_at >= ${q.from}::timestamptz and created_at < ${q.to}::timestamptz`,
  ];
  if (q.split && q.part !== undefined) {
    parts.push(sql.fragment`${sql.identifier([splitColumn[q.split]])}::text = ${q.part}`);
  }
  if (q.before) {
    parts.push(sql.fragment`created_at <= ${q.before.at}::timestamptz
                   and (created_at, id) < (${q.before.at}::timestamptz, ${q.before.id})`);
  }
  return db.any(sql.type(meteringRow)`
    select ${recordColumns}, ${cursorAt()}
    from metering_records
    where ${sql.join(parts, sql.fragment` and `)}
    order by created_at desc, id desc
    limit ${q.limit}
  `);
}

const nameTable: Record<Exclude<SpendSplit, 'operation'>, string> = {
  project: 'projects',
  key: 'api_keys',
  app: 'oauth_apps',
};

/**
 * The names of a split's parts (projects, keys or OAuth apps) by id, for the chart's legend and
 * tables. Apps are named whatever workspace registered them: a workspace's records may name an app
 * registered elsewhere (a metadata-document client). Operations are named by the API document.
 */
export async function nameSpendParts(
  db: Db,
  workspaceId: string,
  split: Exclude<SpendSplit, 'operation'>,
  ids: readonly string[],
): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const table = sql.identifier([nameTable[split]]);
  const ownWorkspace = split === 'app' ? sql.fragment`true` : sql.fragment`workspace_id = ${workspaceId}`;
  const rows = await db.any(sql.type(z.object({ id: z.string(), name: z.string() }))`
    select id, name from ${table} where ${ownWorkspace} and id = any(${sql.array([...ids], 'text')})
  `);
  return new Map(rows.map((r) => [r.id, r.name]));
}
