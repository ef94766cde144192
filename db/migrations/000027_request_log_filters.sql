-- The console's request log stays index-served under every filter it offers (issue 13): calls record the operation they addressed, and status, status class and operation get indexes like key and app.
-- Builds four indexes on every partition of request_logs under lock: on a large log, run the release in a quiet hour.

-- The OpenAPI operation the call addressed (null when the path and method matched none). Calls
-- logged before this migration have none: the operation filter finds calls from this release on.
alter table request_logs add column operation text;

-- Newest first within one exact status (a rare 429 among millions of 200s).
create index request_logs_workspace_status_idx on request_logs (workspace_id, status, created_at, id);
-- Newest first within one status class (the console's "5xx"), read as status / 100.
create index request_logs_workspace_class_idx on request_logs (workspace_id, (status / 100), created_at, id);
-- One key's calls of one class ("this key's errors"): a key whose calls never fail must not make the
-- filter walk all of that key's calls.
create index request_logs_workspace_key_class_idx
  on request_logs (workspace_id, key_id, (status / 100), created_at, id);
-- Newest first within one operation.
create index request_logs_workspace_operation_idx on request_logs (workspace_id, operation, created_at, id)
  where operation is not null;
