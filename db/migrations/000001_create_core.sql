-- Core platform: tenants, people, projects, API keys, credits and metering, jobs, request log, rate limits, status, worker liveness, idempotency.

create table workspaces (
  id text primary key,
  name text not null check (length(name) between 1 and 200),
  currency text not null default 'USD' check (currency ~ '^[A-Z]{3}$'),
  -- Settled credit balance in the currency's minor unit; holds are tracked apart so concurrent calls cannot overspend.
  balance_minor bigint not null default 0,
  reserved_minor bigint not null default 0 check (reserved_minor >= 0),
  storage_quota_bytes bigint not null default 10737418240 check (storage_quota_bytes >= 0),
  storage_used_bytes bigint not null default 0 check (storage_used_bytes >= 0),
  rate_limit_per_minute integer check (rate_limit_per_minute > 0),
  created_at timestamptz not null default now()
);

create table members (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  email text not null check (email ~ '^[^@\s]+@[^@\s]+$'),
  password_hash text not null,
  has_developer_access boolean not null default true,
  created_at timestamptz not null default now(),
  unique (workspace_id, email)
);

create table projects (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  name text not null check (length(name) between 1 and 200),
  archived_at timestamptz,
  created_at timestamptz not null default now()
);
create index projects_workspace_idx on projects (workspace_id);

create table api_keys (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  member_id text not null references members on delete cascade,
  name text not null,
  -- sha256 of the secret: the secret itself is shown once and never stored.
  secret_hash bytea not null unique,
  secret_hint text not null,
  livemode boolean not null,
  scope_level text not null check (scope_level in ('app', 'package', 'operation')),
  scope_packages text[] not null default '{}',
  scope_operations text[] not null default '{}',
  expires_at timestamptz,
  ip_allowlist text[] not null default '{}',
  monthly_spend_cap_minor bigint check (monthly_spend_cap_minor >= 0),
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index api_keys_member_idx on api_keys (member_id);

create table api_key_projects (
  key_id text not null references api_keys on delete cascade,
  project_id text not null references projects on delete cascade,
  primary key (key_id, project_id)
);
create index api_key_projects_project_idx on api_key_projects (project_id);

-- Per key and calendar month (UTC): what settled and what is held, for the monthly spend cap.
create table key_monthly_spend (
  key_id text not null references api_keys on delete cascade,
  month date not null,
  spent_minor bigint not null default 0 check (spent_minor >= 0),
  reserved_minor bigint not null default 0 check (reserved_minor >= 0),
  primary key (key_id, month)
);

create table credit_holds (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  project_id text not null references projects on delete cascade,
  key_id text references api_keys on delete set null,
  operation text not null,
  amount_minor bigint not null check (amount_minor >= 0),
  month date not null,
  status text not null default 'held' check (status in ('held', 'settled', 'released')),
  request_id text,
  created_at timestamptz not null default now(),
  closed_at timestamptz
);
create index credit_holds_open_idx on credit_holds (created_at) where status = 'held';

create table metering_records (
  id text primary key,
  -- At most one record per hold: settlement runs again after a worker crash and must not bill twice.
  hold_id text unique references credit_holds on delete set null,
  job_id text unique,
  workspace_id text not null references workspaces on delete cascade,
  project_id text not null references projects on delete cascade,
  key_id text references api_keys on delete set null,
  operation text not null,
  livemode boolean not null,
  usage jsonb not null default '{}',
  cost_minor bigint not null check (cost_minor >= 0),
  currency text not null,
  request_id text,
  created_at timestamptz not null default now()
);
create index metering_records_workspace_idx on metering_records (workspace_id, created_at);

create table jobs (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  project_id text references projects on delete cascade,
  key_id text references api_keys on delete set null,
  type text not null,
  status text not null default 'queued' check (status in ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
  livemode boolean not null default false,
  input jsonb not null default '{}',
  result jsonb,
  error jsonb,
  hold_id text references credit_holds on delete set null,
  -- What the job was charged, once settled (null until then and for jobs that bill nothing).
  cost_minor bigint,
  request_id text,
  cancel_requested_at timestamptz,
  created_at timestamptz not null default now(),
  started_at timestamptz,
  completed_at timestamptz,
  check ((status in ('succeeded', 'failed', 'cancelled')) = (completed_at is not null))
);
create index jobs_workspace_idx on jobs (workspace_id, created_at);

-- Every status change is announced in the same transaction. A small result and the cost ride along
-- (NOTIFY payloads stop at 8000 bytes), so a waiting request needs no read; listeners refetch otherwise.
create function jobs_notify() returns trigger language plpgsql as $$
begin
  if new.status is distinct from old.status then
    perform pg_notify('jobs:update', json_build_object(
      'id', new.id, 'status', new.status, 'cost', new.cost_minor,
      'result', case when new.status = 'succeeded' and octet_length(new.result::text) <= 6000 then new.result end
    )::text);
  end if;
  return null;
end;
$$;
create trigger jobs_notify after update of status on jobs for each row execute function jobs_notify();

create table request_logs (
  id bigint generated always as identity primary key,
  request_id text not null,
  workspace_id text references workspaces on delete cascade,
  project_id text,
  key_id text,
  method text not null,
  path text not null,
  status integer not null,
  latency_ms integer not null,
  cost_minor bigint not null default 0,
  ip text,
  request_body jsonb,
  response_body jsonb,
  created_at timestamptz not null default now()
);
create index request_logs_created_idx on request_logs (created_at);
create index request_logs_workspace_idx on request_logs (workspace_id, created_at);

create table rate_limit_windows (
  workspace_id text not null references workspaces on delete cascade,
  window_start timestamptz not null,
  used integer not null default 0,
  primary key (workspace_id, window_start)
);

create table status_samples (
  id bigint generated always as identity primary key,
  component text not null,
  state text not null check (state in ('operational', 'degraded', 'outage')),
  latency_ms integer,
  checked_at timestamptz not null default now()
);
create index status_samples_component_idx on status_samples (component, checked_at desc);

create table worker_heartbeats (
  worker_id text primary key,
  process_label text not null,
  last_seen_at timestamptz not null default now()
);

create table idempotency_keys (
  credential_id text not null,
  key text not null,
  request_hash text not null,
  status text not null default 'in_progress' check (status in ('in_progress', 'done')),
  response_status integer,
  response_body jsonb,
  response_location text,
  -- An in-progress entry whose process died is abandoned after this instant.
  locked_until timestamptz not null,
  created_at timestamptz not null default now(),
  primary key (credential_id, key)
);
create index idempotency_keys_created_idx on idempotency_keys (created_at);

-- Domain events (job.succeeded, task.message.created, ...) in the order they happened; webhooks deliver them.
create table events (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  project_id text references projects on delete cascade,
  type text not null,
  data jsonb not null,
  created_at timestamptz not null default now()
);
create index events_workspace_idx on events (workspace_id, created_at);
