-- Opt-in response cache (issue 34): exact-match answers of text and embedding calls, kept per workspace
-- for the TTL the caller asked for (Cache-TTL), and the cache's verdict on each logged call.
create table response_cache_entries (
  workspace_id text not null references workspaces (id) on delete cascade,
  -- hex sha256 of the capability, mode, route and canonical request (shared/cache/cacheKey.ts).
  cache_key text not null,
  operation text not null,
  answer jsonb not null,
  -- What the entry counts against the workspace's cache budget: the answer's JSON length.
  size_bytes integer not null check (size_bytes > 0),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (workspace_id, cache_key)
);

-- The hourly purge of expired entries reads only those.
create index response_cache_entries_expires_idx on response_cache_entries (expires_at);

alter table request_logs add column cache_status text check (cache_status in ('hit', 'miss'));
