import { z } from 'zod';

import { type Db, isoTimestamp, noRows, sql } from '../sql.ts';
import { cursorAt, cursorAtText } from './listPage.ts';

/** One call as the log writes it, and as its row reads back whole. */
export const requestLogEntry = z.object({
  request_id: z.string(),
  workspace_id: z.string().nullable(),
  project_id: z.string().nullable(),
  key_id: z.string().nullable(),
  /** The OAuth app of a call made with an access token (key_id then holds its consent). */
  oauth_app_id: z.string().nullable().optional(),
  /** The OpenAPI operation id the call addressed; null when its method and path matched none. */
  operation: z.string().nullable().optional(),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  latency_ms: z.number(),
  cost_minor: z.number(),
  ip: z.string().nullable(),
  request_body: z.unknown(),
  response_body: z.unknown(),
  created_at: isoTimestamp,
  /** The response cache's verdict on a call that asked for it (Cache-TTL) with a live key; else null. */
  cache_status: z.enum(['hit', 'miss']).nullable().optional(),
});
export type RequestLogEntry = z.infer<typeof requestLogEntry>;

/**
 * One statement for a whole batch: the log must not cost a write per request.
 * @throws the database error when PostgreSQL refuses any row (the whole batch is then not written).
 */
export async function insertRequestLogs(db: Db, entries: RequestLogEntry[]): Promise<void> {
  // The batch as one JSON text: sql.jsonb would first walk every value building a path string per
  // node to look for text jsonb refuses, on the event loop, for hundreds of rows a flush. Bodies are
  // already storable (redact.ts); a row PostgreSQL still refuses fails with its SQLSTATE, which the
  // writer splits its batch around.
  await db.query(sql.prepared('request_logs_insert', noRows)`
    insert into request_logs (request_id, workspace_id, project_id, key_id, oauth_app_id, operation, method, path,
                              status, latency_ms, cost_minor, ip, request_body, response_body, created_at,
                              cache_status)
    select request_id, workspace_id, project_id, key_id, oauth_app_id, operation, method, path, status, latency_ms,
           cost_minor, ip, request_body, response_body, created_at, cache_status
    from jsonb_to_recordset(${JSON.stringify(entries)}::jsonb) as t(
      request_id text, workspace_id text, project_id text, key_id text, oauth_app_id text, operation text,
      method text, path text, status int,
      latency_ms int, cost_minor bigint, ip text, request_body jsonb, response_body jsonb, created_at timestamptz,
      cache_status text)
    where workspace_id is null or exists (select 1 from workspaces w where w.id = t.workspace_id)
  `);
}

const partitionName = z.object({ name: z.string() });

/**
 * Drops the monthly partitions of the request log whose every row is older than `days` days: the
 * cheap part of retention (no row-by-row delete, no dead tuples).
 * @throws the database error, lock_timeout (55P03) included when a long read holds the table.
 */
export function dropRequestLogPartitionsBefore(db: Db, days: number) {
  return db.anyFirst(sql.type(partitionName)`
    select name from drop_month_partitions_before('request_logs', now() - make_interval(days => ${days})) as name
  `);
}

/**
 * Deletes what partition drops leave: rows older than `days` days in the oldest remaining partition
 * (and in the default partition), so nothing outlives the promise by up to a month.
 */
export async function deleteRequestLogsBefore(db: Db, days: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    delete from request_logs where created_at < now() - make_interval(days => ${days})
  `);
}

/**
 * Creates the request log's partitions for this month and `monthsAhead` after it, and for any month
 * with rows waiting in the default partition (moved into it). Returns the names created.
 * @throws the database error, lock_timeout (55P03) included.
 */
export function createRequestLogPartitions(db: Db, monthsAhead: number) {
  return db.anyFirst(sql.type(partitionName)`
    select name from create_month_partitions('request_logs', ${monthsAhead}) as name
  `);
}

/**
 * A logged call's cost (`cost_minor`) as its metering records charged, whatever the outcome: the
 * answer's own cost was all the row could hold when it was written, and a call's charge may be
 * settled after its answer went out (a client that left, a stream that failed after a delta). Read
 * through metering_records_request_idx; a record is never written before its call started (the
 * hour covers clocks of api processes and PostgreSQL that disagree), so at most two monthly
 * partitions are probed. Without a record (no billed work, or none yet) the row's own cost stands.
 */
const meteredCost = sql.fragment`coalesce((
    select sum(m.cost_minor)::bigint from metering_records m
    where m.workspace_id = l.workspace_id and m.request_id = l.request_id
      and m.created_at >= l.created_at - make_interval(secs => l.latency_ms / 1000.0) - interval '1 hour'
      and m.created_at < now() + interval '1 hour'
  ), l.cost_minor) as cost_minor`;

/** Where a page of a workspace's request log ends: the last row's (created_at, id), exact to the microsecond. */
export type RequestLogCursor = { at: string; id: number };

const requestLogRow = z.object({
  id: z.number(),
  request_id: z.string(),
  key_id: z.string().nullable(),
  method: z.string(),
  path: z.string(),
  status: z.number(),
  latency_ms: z.number(),
  cost_minor: z.number(),
  created_at: isoTimestamp,
  cursor_at: cursorAtText,
});

/** The console's filters; each narrows the workspace's window and each is index-served (000025, 000027). */
export type RequestLogFilter = {
  keyId?: string;
  oauthAppId?: string;
  /** One exact status (429), or one class (5 for 5xx). */
  status?: { exact: number } | { class: number };
  /** An OpenAPI operation id. */
  operation?: string;
  since?: string;
  until?: string;
};

const filteredLogRow = requestLogRow.extend({
  oauth_app_id: z.string().nullable(),
  cache_status: z.enum(['hit', 'miss']).nullable(),
});

/**
 * A status filter as the indexes read it: a class is `status / 100` (request_logs_workspace_class_idx,
 * or request_logs_workspace_key_class_idx beside a key). An exact status names its class too, so that
 * beside a key the walk stays within that key's calls of the class; alone, request_logs_workspace_status_idx
 * serves it.
 */
function statusPredicate(status: NonNullable<RequestLogFilter['status']>) {
  return 'exact' in status
    ? sql.fragment`status = ${status.exact} and status / 100 = ${Math.floor(status.exact / 100)}`
    : sql.fragment`status / 100 = ${status.class}`;
}

/**
 * The console's request log: the workspace's calls in the retention window, filtered, newest first,
 * one page after `before`. The time filters bound created_at, so partitions outside are pruned.
 * Every filter is an equality on the leading columns of an index ending in (created_at, id), so a
 * sparse filter reads only its own rows, newest first, instead of walking the workspace's month. What
 * stays slow: two filters each matching many calls but rarely the same ones (a busy key and a busy
 * operation it never calls), as no single index holds both.
 */
export function listFilteredRequestLogs(
  db: Db,
  workspaceId: string,
  filter: RequestLogFilter,
  page: { before?: RequestLogCursor; limit: number; retentionDays: number },
) {
  // The workspace as a range, and first in the order: as an equality, the planner folds it out of the
  // order, and when the statistics make the workspace most of a partition it would rather walk the
  // primary key (created_at, id) newest first and drop other workspaces' calls. Beside another
  // tenant's burst that walk passed the whole burst (console pages at 50–95 ms instead of 5, after
  // the MCP bench's calls). This way only an index leading with workspace_id gives the order.
  const parts = [sql.fragment`workspace_id >= ${workspaceId} and workspace_id <= ${workspaceId}`];
  parts.push(sql.fragment`created_at >= now() - make_interval(days => ${page.retentionDays})`);
  if (filter.keyId) parts.push(sql.fragment`key_id = ${filter.keyId}`);
  if (filter.oauthAppId) parts.push(sql.fragment`oauth_app_id = ${filter.oauthAppId}`);
  if (filter.status) parts.push(statusPredicate(filter.status));
  if (filter.operation) parts.push(sql.fragment`operation = ${filter.operation}`);
  if (filter.since) parts.push(sql.fragment`created_at >= ${filter.since}::timestamptz`);
  if (filter.until) parts.push(sql.fragment`created_at < ${filter.until}::timestamptz`);
  if (page.before) {
    parts.push(sql.fragment`created_at <= ${page.before.at}::timestamptz
                   and (created_at, id) < (${page.before.at}::timestamptz, ${page.before.id})`);
  }
  return db.any(sql.type(filteredLogRow)`
    select id, request_id, key_id, oauth_app_id, method, path, status, latency_ms, ${meteredCost}, created_at,
           cache_status, ${cursorAt()}
    from request_logs l
    where ${sql.join(parts, sql.fragment` and `)}
    order by workspace_id desc, created_at desc, id desc
    limit ${page.limit}
  `);
}

const fullLogRow = filteredLogRow.extend({
  project_id: z.string().nullable(),
  ip: z.string().nullable(),
  request_body: z.unknown(),
  response_body: z.unknown(),
});

/** One call of the workspace, by its primary key (created_at, id); its bodies were redacted when logged. */
export function findWorkspaceRequestLog(db: Db, workspaceId: string, at: string, id: number) {
  return db.maybeOne(sql.type(fullLogRow)`
    select id, request_id, key_id, oauth_app_id, project_id, method, path, status, latency_ms, ${meteredCost}, ip,
           request_body, response_body, created_at, cache_status,
           ${cursorAt()}
    from request_logs l
    where created_at = ${at}::timestamptz and id = ${id} and workspace_id = ${workspaceId}
  `);
}
