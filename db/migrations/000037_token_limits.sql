-- Token limits (issue 34): tokens per minute per workspace and per key, counted fleet-wide in fixed
-- one-minute windows as the request limiter counts requests (rate_limit_windows). A call reserves
-- its upper bound in its workspace's and key's windows; its job settles the reservation to the real
-- count when it ends (token_reservations, one row per reserving job, deleted as it settles).
alter table workspaces add column tokens_per_minute bigint check (tokens_per_minute > 0);
alter table api_keys add column tokens_per_minute bigint check (tokens_per_minute > 0);

-- A changed workspace limit reaches the api processes' key caches at once, as the request limit does.
drop trigger workspaces_auth_changed on workspaces;
create trigger workspaces_auth_changed
  after update of currency, rate_limit_per_minute, tokens_per_minute or delete on workspaces
  for each statement execute function auth_changed_notify();

-- `scope` is `ws:<workspace id>` or `key:<key id>`; old windows go with rate_limit_windows' pruning.
create table token_limit_windows (
  scope text not null,
  window_start timestamptz not null,
  used bigint not null default 0,
  primary key (scope, window_start)
);

create table token_reservations (
  job_id text primary key,
  workspace_id text not null,
  key_id text,
  window_start timestamptz not null,
  tokens bigint not null check (tokens >= 0),
  created_at timestamptz not null default now()
);

-- A provider account's own budgets (PROVIDERS `rpm`/`tpm`), spent by every worker process alike.
create table provider_budget_windows (
  provider text not null,
  window_start timestamptz not null,
  requests integer not null default 0,
  tokens bigint not null default 0,
  primary key (provider, window_start)
);
