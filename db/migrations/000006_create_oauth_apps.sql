-- Third-party OAuth apps registered under a project (registration only; the authorization server builds on it).
create table oauth_apps (
  id text primary key,
  project_id text not null references projects on delete cascade,
  workspace_id text not null references workspaces on delete cascade,
  name text not null check (length(name) between 1 and 200),
  client_id text not null unique check (client_id ~ '^svc_oc_[0-9A-Za-z]+$'),
  -- sha256 of the secret, shown once; null for public (native or single-page) clients.
  client_secret_hash bytea,
  type text not null check (type in ('server', 'public')),
  redirect_uris text[] not null check (cardinality(redirect_uris) > 0),
  scopes text[] not null check (cardinality(scopes) > 0),
  verified boolean not null default false,
  created_at timestamptz not null default now(),
  check ((type = 'server') = (client_secret_hash is not null))
);
create index oauth_apps_project_idx on oauth_apps (project_id);
