-- request_logs and metering_records become partitioned by calendar month (UTC) of created_at, rows kept; metering_claims keeps "billed once per job and hold" across partitions.
-- Rewrites both tables under an exclusive lock: on a large metering history, run the release in a quiet hour.

-- Partitions are named <table>_YYYY_MM and cover one UTC calendar month. Each partitioned table also
-- has a DEFAULT partition, so an insert never fails when maintenance lags behind the calendar.

-- Creates the partition of `parent` for the month holding `month`, unless it exists; rows of that month
-- waiting in the DEFAULT partition move into it. The default partition is locked meanwhile, so a row
-- of that month arriving concurrently waits and lands in the new partition.
create function create_month_partition(parent regclass, month date) returns text
language plpgsql
set lock_timeout = '5s'
as $$
declare
  first_day timestamptz := date_trunc('month', month)::timestamp at time zone 'utc';
  next_first_day timestamptz := (date_trunc('month', month) + interval '1 month')::timestamp at time zone 'utc';
  part text := format('%s_%s', (select relname from pg_class where oid = parent), to_char(month, 'YYYY_MM'));
  default_part regclass;
begin
  -- One creator per table at a time: checking, then creating, must not race another maintenance run.
  perform pg_advisory_xact_lock(hashtextextended('month_partitions:' || parent::text, 0));
  if to_regclass(format('%I', part)) is not null then
    return null;
  end if;
  select p.partdefid::regclass into default_part
  from pg_partitioned_table p where p.partrelid = parent and p.partdefid <> 0;
  if default_part is not null then
    execute format('lock table %s in access exclusive mode', default_part);
  end if;
  -- Created apart and attached: rows can be moved in first, and a plain table fires none of the
  -- parent's triggers (metering_records_claim must not see a moved row as a second record).
  execute format('create table %I (like %s including defaults including constraints)', part, parent);
  if default_part is not null then
    execute format(
      'with moved as (delete from %s where created_at >= %L and created_at < %L returning *) insert into %I select * from moved',
      default_part, first_day, next_first_day, part);
  end if;
  execute format('alter table %s attach partition %I for values from (%L) to (%L)', parent, part, first_day, next_first_day);
  return part;
end;
$$;

-- The current UTC month and `months_ahead` after it, plus every month that has rows waiting in the
-- DEFAULT partition (maintenance lagged, or a clock ran off): creates the partitions missing. Returns
-- the names created.
create function create_month_partitions(parent regclass, months_ahead integer) returns setof text
language plpgsql
as $$
declare
  this_month date := date_trunc('month', now() at time zone 'utc')::date;
  default_part regclass;
  months date[];
  month_list date[];
  month date;
  created text;
begin
  select array_agg((this_month + make_interval(months => n))::date order by n) into months
  from generate_series(0, months_ahead) n;
  select p.partdefid::regclass into default_part
  from pg_partitioned_table p where p.partrelid = parent and p.partdefid <> 0;
  if default_part is not null then
    -- Read whole before any partition is attached: the default partition must not be in use then.
    execute format('select array_agg(distinct date_trunc(''month'', created_at at time zone ''utc'')::date) from %s',
                   default_part)
    into strict month_list;
  end if;
  foreach month in array months || coalesce(month_list, '{}') loop
    created := create_month_partition(parent, month);
    if created is not null then
      return next created;
    end if;
  end loop;
end;
$$;

-- Drops the monthly partitions of `parent` whose every row is older than `cutoff` (the upper bound
-- of their range is at or before it). The DEFAULT partition is never dropped. Waits at most 5 s for
-- the parent's lock (dropping a partition locks it), so a long read cannot queue every insert
-- behind the drop; the next maintenance run tries again. Returns the names dropped.
create function drop_month_partitions_before(parent regclass, cutoff timestamptz) returns setof text
language plpgsql
set lock_timeout = '5s'
as $$
declare
  part record;
begin
  perform pg_advisory_xact_lock(hashtextextended('month_partitions:' || parent::text, 0));
  for part in
    select c.oid::regclass as rel, c.relname::text as name,
           (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz as upper_bound
    from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = parent
    order by 3
  loop
    if part.upper_bound is not null and part.upper_bound <= cutoff then
      execute format('drop table %s', part.rel);
      return next part.name;
    end if;
  end loop;
end;
$$;

-- request_logs ---------------------------------------------------------------------------------------

alter table request_logs rename to request_logs_unpartitioned;
-- The old table's constraints and indexes go first, so the new ones can take their names.
alter table request_logs_unpartitioned
  drop constraint request_logs_pkey,
  drop constraint request_logs_workspace_id_fkey;
drop index request_logs_created_idx;
drop index request_logs_workspace_idx;
-- A plain sequence rather than an identity column: identity on a partitioned table needs PostgreSQL 17.
alter table request_logs_unpartitioned alter column id drop identity;
create sequence request_logs_id_seq as bigint;

create table request_logs (
  id bigint not null default nextval('request_logs_id_seq'),
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
  created_at timestamptz not null default now(),
  -- Also the index retention deletes by (rows past 30 days in the oldest partition kept).
  primary key (created_at, id)
) partition by range (created_at);
alter sequence request_logs_id_seq owned by request_logs.id;
-- A workspace's calls, newest first, paged by the cursor (created_at, id).
create index request_logs_workspace_idx on request_logs (workspace_id, created_at, id);
create table request_logs_default partition of request_logs default;

select create_month_partition('request_logs', m)
from (select distinct date_trunc('month', created_at at time zone 'utc')::date as m from request_logs_unpartitioned) months;
select create_month_partitions('request_logs', 2);
insert into request_logs select * from request_logs_unpartitioned;
select setval('request_logs_id_seq', coalesce((select max(id) from request_logs_unpartitioned), 0) + 1, false);
drop table request_logs_unpartitioned;

-- metering_records -----------------------------------------------------------------------------------

-- One row per metering record, in one unpartitioned table so its unique keys span every month (a
-- unique index on a partitioned table must include the partition key). Written by the trigger below
-- in the same statement as the record: a job, a hold and a record id are each billed at most once.
-- Claims are never deleted (billing records have no retention); one left by a deleted record still
-- keeps its job and hold billed once.
create table metering_claims (
  metering_id text primary key,
  job_id text unique,
  hold_id text unique
);

alter table metering_records rename to metering_records_unpartitioned;
alter table metering_records_unpartitioned
  drop constraint metering_records_pkey,
  drop constraint metering_records_hold_id_key,
  drop constraint metering_records_job_id_key,
  drop constraint metering_records_hold_id_fkey,
  drop constraint metering_records_workspace_id_fkey,
  drop constraint metering_records_project_id_fkey,
  drop constraint metering_records_key_id_fkey,
  drop constraint metering_records_cost_minor_check;
drop index metering_records_workspace_idx;

create table metering_records (
  id text not null,
  hold_id text references credit_holds on delete set null,
  job_id text,
  workspace_id text not null references workspaces on delete cascade,
  project_id text not null references projects on delete cascade,
  key_id text references api_keys on delete set null,
  operation text not null,
  livemode boolean not null,
  usage jsonb not null default '{}',
  cost_minor bigint not null check (cost_minor >= 0),
  currency text not null,
  request_id text,
  created_at timestamptz not null default now(),
  primary key (id, created_at)
) partition by range (created_at);
-- A workspace's records of a month (one partition) newest first by (created_at, id); operation and
-- cost ride along so a month's usage per operation is summed from the index alone (index-only scan).
create index metering_records_workspace_idx on metering_records (workspace_id, created_at, id)
  include (operation, cost_minor);
create table metering_records_default partition of metering_records default;

select create_month_partition('metering_records', m)
from (select distinct date_trunc('month', created_at at time zone 'utc')::date as m from metering_records_unpartitioned) months;
select create_month_partitions('metering_records', 2);
insert into metering_records select * from metering_records_unpartitioned;
insert into metering_claims (metering_id, job_id, hold_id) select id, job_id, hold_id from metering_records_unpartitioned;
drop table metering_records_unpartitioned;

-- A record whose job, hold or id is already claimed is skipped, exactly as the unique constraints with
-- "on conflict do nothing" skipped it before partitioning (settleUsage and finishUnbilledJobs rely on
-- that): the claim insert waits for a concurrent claim of the same key to commit or roll back.
create function metering_records_claim() returns trigger language plpgsql as $$
begin
  insert into metering_claims (metering_id, job_id, hold_id) values (new.id, new.job_id, new.hold_id)
  on conflict do nothing;
  if not found then
    return null;
  end if;
  return new;
end;
$$;
create trigger metering_records_claim before insert on metering_records
  for each row execute function metering_records_claim();

-- The claim is only as good as the record's keys staying put (a hold's deletion may still null hold_id).
create function metering_records_keep_keys() returns trigger language plpgsql as $$
begin
  if new.id is distinct from old.id or new.job_id is distinct from old.job_id
     or (new.hold_id is not null and new.hold_id is distinct from old.hold_id) then
    raise exception 'a metering record''s id, job and hold cannot change' using errcode = 'integrity_constraint_violation';
  end if;
  return new;
end;
$$;
create trigger metering_records_keep_keys before update on metering_records
  for each row execute function metering_records_keep_keys();
