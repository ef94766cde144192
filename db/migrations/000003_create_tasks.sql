-- Tasks and their messages, staff members, workflows, webhook endpoints and deliveries, a minimal files table, and the shared cursor secret.

-- Named secrets every api and worker process on this database shares: cursors signed by one api
-- instance must verify on another, so the key cannot be a per-process random value.
create table server_secrets (
  name text primary key,
  secret bytea not null check (length(secret) >= 32),
  created_at timestamptz not null default now()
);
-- gen_random_uuid() draws from the server's strong random source; two v4 uuids carry 244 random bits.
insert into server_secrets (name, secret)
values ('cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

-- Files a task message or workflow value can reference; the files capability builds uploads on it.
create table files (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  member_id text references members on delete set null,
  filename text not null check (length(filename) between 1 and 255),
  mime_type text not null check (length(mime_type) >= 1),
  size_bytes bigint not null check (size_bytes >= 0),
  kind text not null default 'file' check (kind ~ '^[a-z][a-z_]*$'),
  storage_key text not null,
  created_at timestamptz not null default now(),
  -- Target of the (workspace_id, id) foreign keys below: a row can only point at files of its own workspace.
  unique (workspace_id, id)
);
create index files_workspace_idx on files (workspace_id, created_at);

create table staff_members (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  name text not null check (length(name) between 1 and 200),
  -- The role is operator-written instructions for the staff member's runs.
  role text not null check (length(role) between 1 and 20000),
  status text not null default 'active' check (status in ('active', 'inactive')),
  -- Minted once at creation; the API channel switch decides whether it is reachable and shown.
  api_address text not null unique check (api_address ~ '^stf_[0-9A-Za-z]{20,64}$'),
  api_channel_enabled boolean not null default false,
  created_at timestamptz not null default now(),
  unique (workspace_id, id)
);
create index staff_members_workspace_idx on staff_members (workspace_id, created_at);

create table workflows (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  name text not null check (length(name) between 1 and 200),
  -- Operator-written template; {{key}} placeholders name fields (shared/workflows/template.ts).
  prompt_template text not null check (length(prompt_template) between 1 and 20000),
  -- Field definitions (shared/workflows/fields.ts), validated when the workflow is created.
  fields jsonb not null check (jsonb_typeof(fields) = 'array'),
  suggested_staff_id text,
  created_at timestamptz not null default now(),
  unique (workspace_id, id),
  foreign key (workspace_id, suggested_staff_id) references staff_members (workspace_id, id)
    on delete set null (suggested_staff_id)
);
create index workflows_workspace_idx on workflows (workspace_id, created_at);

create table tasks (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  -- The project the task's replies are metered against (resolved from the creating request).
  project_id text references projects on delete set null,
  title text not null check (length(title) between 1 and 200),
  assignee_staff_id text,
  workflow_id text,
  -- The validated values of the workflow run that created the task; given to the model as data.
  workflow_values jsonb,
  -- Messages are numbered per task while this row is locked, so a message's number is also its
  -- commit order: a reader that has seen number n has seen every message before it (cursors never skip).
  last_message_seq bigint not null default 0 check (last_message_seq >= 0),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, id),
  foreign key (workspace_id, assignee_staff_id) references staff_members (workspace_id, id)
    on delete set null (assignee_staff_id),
  foreign key (workspace_id, workflow_id) references workflows (workspace_id, id) on delete set null (workflow_id)
);
create index tasks_workspace_idx on tasks (workspace_id, created_at);

create table task_messages (
  id text primary key,
  workspace_id text not null,
  task_id text not null,
  seq bigint not null check (seq > 0),
  role text not null check (role in ('user', 'assistant')),
  text text not null,
  -- A failed reply is an assistant message that says why no answer came (out of credits, provider down).
  status text not null default 'completed' check (status in ('completed', 'failed')),
  error_code text,
  -- The staff member a reply came from (null: the workspace assistant or a user message).
  staff_id text,
  -- The reply job that wrote it: a retried job can never add a second reply.
  job_id text unique references jobs on delete set null,
  created_at timestamptz not null default now(),
  unique (task_id, seq),
  unique (workspace_id, id),
  foreign key (workspace_id, task_id) references tasks (workspace_id, id) on delete cascade,
  foreign key (workspace_id, staff_id) references staff_members (workspace_id, id) on delete set null (staff_id),
  check ((status = 'failed') = (error_code is not null)),
  check (role = 'assistant' or (status = 'completed' and staff_id is null and job_id is null))
);

create table task_message_files (
  workspace_id text not null,
  message_id text not null,
  file_id text not null,
  primary key (message_id, file_id),
  foreign key (workspace_id, message_id) references task_messages (workspace_id, id) on delete cascade,
  foreign key (workspace_id, file_id) references files (workspace_id, id) on delete cascade
);
create index task_message_files_file_idx on task_message_files (file_id);

-- Every new message is announced in its own transaction; api streams refetch after their cursor.
create function task_messages_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('tasks:message', json_build_object(
    'id', new.task_id, 'messageId', new.id, 'seq', new.seq, 'role', new.role)::text);
  return null;
end;
$$;
create trigger task_messages_notify after insert on task_messages for each row execute function task_messages_notify();

create table webhook_endpoints (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  project_id text not null references projects on delete cascade,
  url text not null check (url ~ '^https?://'),
  events text[] not null check (cardinality(events) > 0),
  -- Standard Webhooks secret (whsec_<base64>), kept in clear because every delivery is signed with it.
  secret text not null check (secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'),
  enabled boolean not null default true,
  created_at timestamptz not null default now()
);
create index webhook_endpoints_project_idx on webhook_endpoints (project_id);

-- The delivery log: one row per (endpoint, event), its attempts below.
create table webhook_deliveries (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  endpoint_id text not null references webhook_endpoints on delete cascade,
  event_id text not null references events on delete cascade,
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed')),
  attempts integer not null default 0 check (attempts >= 0),
  last_status_code integer,
  last_error text,
  next_attempt_at timestamptz,
  created_at timestamptz not null default now(),
  completed_at timestamptz,
  unique (endpoint_id, event_id),
  check ((status = 'pending') = (completed_at is null))
);
create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, created_at);
create index webhook_deliveries_event_idx on webhook_deliveries (event_id);

create table webhook_delivery_attempts (
  id bigint generated always as identity primary key,
  delivery_id text not null references webhook_deliveries on delete cascade,
  attempt integer not null check (attempt > 0),
  status_code integer,
  error text,
  duration_ms integer not null check (duration_ms >= 0),
  created_at timestamptz not null default now(),
  unique (delivery_id, attempt)
);
