-- Videos (POST /videos): a clip rendered on a task, stored as a file of kind video attached to that task (its media board).

-- A file may belong to a task's media board. The composite key keeps it in the task's workspace;
-- deleting the task leaves the file in its owner's drive (its bytes and storage use stay accounted).
alter table files
  add column task_id text,
  add constraint files_task_fkey foreign key (workspace_id, task_id)
    references tasks (workspace_id, id) on delete set null (task_id);
create index files_task_idx on files (task_id, created_at) where task_id is not null;

create table videos (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  task_id text not null,
  -- The project the render is metered against.
  project_id text references projects on delete set null,
  -- The video.generate job that renders it (test-key fixtures get an already succeeded one).
  job_id text references jobs on delete set null,
  -- Set when ready; the file row carries the bytes' size, type and storage key.
  file_id text,
  title text not null check (length(title) between 1 and 200),
  prompt text not null check (length(prompt) between 1 and 2000),
  negative_prompt text check (length(negative_prompt) <= 2000),
  status text not null default 'generating' check (status in ('generating', 'ready', 'failed')),
  -- A short public message; set exactly when the render failed (the spec shows null while generating).
  error text,
  aspect_ratio text not null check (aspect_ratio in ('16:9', '9:16')),
  resolution text not null check (resolution in ('720p', '1080p')),
  requested_duration_seconds integer not null check (requested_duration_seconds between 1 and 60),
  -- The rendered clip's length: null until ready (spec: null in the create response).
  duration_seconds integer check (duration_seconds > 0),
  livemode boolean not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, id),
  foreign key (workspace_id, task_id) references tasks (workspace_id, id) on delete cascade,
  foreign key (workspace_id, file_id) references files (workspace_id, id) on delete set null (file_id),
  check ((status = 'failed') = (error is not null)),
  check (status <> 'ready' or duration_seconds is not null)
);
create index videos_task_idx on videos (task_id, created_at);
create index videos_workspace_idx on videos (workspace_id, created_at);
-- Jobs are pruned: the set-null on delete looks its video up here.
create index videos_job_idx on videos (job_id) where job_id is not null;
