import { type Db, noRows, sql } from '../sql.ts';

export type RequestLogEntry = {
  request_id: string;
  workspace_id: string | null;
  project_id: string | null;
  key_id: string | null;
  method: string;
  path: string;
  status: number;
  latency_ms: number;
  cost_minor: number;
  ip: string | null;
  request_body: unknown;
  response_body: unknown;
  created_at: string;
};

/** One statement for a whole batch: the log must not cost a write per request. */
export async function insertRequestLogs(db: Db, entries: RequestLogEntry[]): Promise<void> {
  await db.query(sql.prepared('request_logs_insert', noRows)`
    insert into request_logs (request_id, workspace_id, project_id, key_id, method, path, status, latency_ms,
                              cost_minor, ip, request_body, response_body, created_at)
    select request_id, workspace_id, project_id, key_id, method, path, status, latency_ms, cost_minor, ip,
           request_body, response_body, created_at
    from jsonb_to_recordset(${sql.jsonb(entries as never)}) as t(
      request_id text, workspace_id text, project_id text, key_id text, method text, path text, status int,
      latency_ms int, cost_minor bigint, ip text, request_body jsonb, response_body jsonb, created_at timestamptz)
    where workspace_id is null or exists (select 1 from workspaces w where w.id = t.workspace_id)
  `);
}

export async function deleteRequestLogsBefore(db: Db, days: number): Promise<void> {
  await db.query(sql.typeAlias('void')`
    delete from request_logs where created_at < now() - make_interval(days => ${days})
  `);
}
