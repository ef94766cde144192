-- Files, issue 10: storage quota reservations and presigned multipart upload sessions.

-- Bytes held against a workspace's storage quota while an upload is under way. The quota check
-- counts `storage_used_bytes` (stored files) plus every reservation that has not expired, under a
-- lock on the workspace row, so concurrent uploads can never pass the quota together. A reservation
-- ends with its upload: deleted when the file row commits (the bytes move into storage_used_bytes)
-- or when the upload fails. One left by a process that died simply expires: it stops counting at
-- expires_at, and the upload sweeper deletes it.
create table storage_reservations (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  bytes bigint not null check (bytes >= 0),
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index storage_reservations_workspace_idx on storage_reservations (workspace_id, expires_at);

-- A presigned multipart upload: the S3 upload it drives, the part layout the client was given, and
-- the quota reservation (same id) that holds sizeBytes until it completes or expires. `file_id` is
-- set by the one complete that wins; a later complete finds the session no longer open.
create table upload_sessions (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  member_id text references members on delete set null,
  filename text not null check (length(filename) between 1 and 255),
  mime_type text not null check (length(mime_type) >= 1),
  size_bytes bigint not null check (size_bytes >= 0),
  part_size bigint not null check (part_size > 0),
  part_count integer not null check (part_count between 1 and 10000),
  storage_key text not null,
  s3_upload_id text not null,
  status text not null default 'open' check (status in ('open', 'completed', 'aborted')),
  file_id text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  constraint upload_sessions_file_fkey foreign key (workspace_id, file_id)
    references files (workspace_id, id) on delete set null (file_id),
  constraint upload_sessions_file_check check (status = 'completed' or file_id is null)
);
-- The sweeper's scan: sessions still open after their expiry.
create index upload_sessions_open_expiry_idx on upload_sessions (expires_at) where status = 'open';

-- The orphan sweep asks which stored objects belong to a file (one object per file).
create unique index files_storage_key_idx on files (storage_key);
create index upload_sessions_storage_key_idx on upload_sessions (storage_key) where status = 'open';
