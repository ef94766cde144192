-- OAuth 2.1 authorization server, issue 11: people's browser sessions, sign-in throttling, consents (grants), authorization codes, access and refresh tokens; OAuth usage attributed to its app.

-- A signed-in browser. The cookie carries a random secret; only its sha256 is kept, so a leaked row
-- cannot be replayed as a cookie. A person is an email address: the session covers every member row
-- (one per workspace) whose password matched at sign-in.
create table browser_sessions (
  id text primary key,
  secret_hash bytea not null unique,
  email text not null,
  member_ids text[] not null check (cardinality(member_ids) > 0),
  ip text,
  user_agent text,
  created_at timestamptz not null default now(),
  last_seen_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index browser_sessions_member_ids_idx on browser_sessions using gin (member_ids);
create index browser_sessions_expires_idx on browser_sessions (expires_at);

-- Failed sign-ins per subject (`email:<address>` or `ip:<address>`) in a fixed window, shared by every
-- api process: the limit holds however many processes a guesser spreads its attempts over.
create table sign_in_failures (
  subject text primary key,
  failures integer not null check (failures >= 0),
  window_started_at timestamptz not null
);

-- A person's consent: this app may act for this member (so in this workspace) with these scopes.
-- Cutting the app off revokes it (and every token under it); the next authorization asks again.
create table oauth_grants (
  id text primary key,
  app_id text not null references oauth_apps on delete cascade,
  workspace_id text not null references workspaces on delete cascade,
  member_id text not null references members on delete cascade,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- Last call with any of its tokens (at most a minute stale), kept here because tokens expire and go.
  last_used_at timestamptz,
  revoked_at timestamptz
);
-- One live consent per app and member: approving again widens or narrows it in place.
create unique index oauth_grants_live_idx on oauth_grants (app_id, member_id) where revoked_at is null;
create index oauth_grants_member_idx on oauth_grants (member_id);
create index oauth_grants_workspace_idx on oauth_grants (workspace_id);

-- Authorization codes (svc_ac_…), stored hashed, single use: `used_at` is set by the one exchange that
-- wins; a later exchange of the same code revokes every token of its family (RFC 9700 §4.5).
create table oauth_codes (
  id text primary key,
  code_hash bytea not null unique,
  grant_id text not null references oauth_grants on delete cascade,
  redirect_uri text not null,
  code_challenge text not null,
  scopes text[] not null,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth_codes_grant_idx on oauth_codes (grant_id);
create index oauth_codes_expires_idx on oauth_codes (expires_at);

-- Access (svc_at_…) and refresh (svc_rt_…) tokens, stored hashed. `family_id` is the code that started
-- the chain of rotations: a replayed code revokes the whole family. A refresh token that rotated keeps
-- its successor pair for a short grace window, sealed with a key derived from the refresh token
-- itself (only its holder can open it), so a concurrent refresh with the same token gets the same
-- new pair instead of a logout.
create table oauth_tokens (
  id text primary key,
  kind text not null check (kind in ('access', 'refresh')),
  token_hash bytea not null unique,
  hint text not null,
  grant_id text not null references oauth_grants on delete cascade,
  family_id text not null,
  -- For an access token: the refresh token issued with it (rotating that refresh token ends it).
  refresh_token_id text references oauth_tokens on delete cascade,
  scopes text[] not null,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  rotated_at timestamptz,
  successor_sealed bytea,
  last_used_at timestamptz,
  created_at timestamptz not null default now(),
  check ((kind = 'access') or refresh_token_id is null)
);
create index oauth_tokens_grant_idx on oauth_tokens (grant_id);
create index oauth_tokens_family_idx on oauth_tokens (family_id);
create index oauth_tokens_refresh_idx on oauth_tokens (refresh_token_id);
create index oauth_tokens_expires_idx on oauth_tokens (expires_at);

-- Access tokens are cached like keys: revoking one, cutting a consent off or changing an app empties
-- the api processes' caches at once (auth_changed_notify, migrations 000004 and 000010). `last_used_at`
-- alone changes nothing cached, so only the columns that matter fire.
create trigger oauth_tokens_auth_changed after update of revoked_at, expires_at or delete on oauth_tokens
  for each statement execute function auth_changed_notify();
create trigger oauth_grants_auth_changed after update of revoked_at, scopes, member_id or delete on oauth_grants
  for each statement execute function auth_changed_notify();
create trigger oauth_apps_auth_changed after update of project_id, name or delete on oauth_apps
  for each statement execute function auth_changed_notify();

-- OAuth calls are attributed to the app besides its project (spec: usage goes to the app's project).
alter table request_logs add column oauth_app_id text;
alter table metering_records add column oauth_app_id text;
alter table credit_holds add column oauth_app_id text;
alter table jobs add column oauth_app_id text;
