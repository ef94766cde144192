-- Open server-sent event streams are counted per workspace across every api process: one lease row per open stream, deleted when it closes and expiring by itself (a process that dies cannot leak its count), and per workspace the number of lease rows, changed in the same statement as the rows.
create table stream_lease_counts (
  -- Only this table references workspaces: a lease taken or released never locks the workspace row,
  -- which credit reservations hold FOR UPDATE.
  workspace_id text primary key references workspaces on delete cascade,
  -- Lease rows of the workspace, expired ones included until they are purged (see stream_leases).
  leases integer not null default 0 check (leases >= 0)
);

create table stream_leases (
  id text primary key,
  workspace_id text not null references stream_lease_counts on delete cascade,
  -- After this the stream cannot still be open (its longest hold, its last flush and a margin): a lease
  -- left by a process that died counts until then, and is purged when the workspace next reaches its limit.
  expires_at timestamptz not null
);

create index stream_leases_expiry_idx on stream_leases (workspace_id, expires_at);
