-- Idempotency keys are recorded with the work they describe: a create writes its answer in its own transaction; a synchronous generation keys its job by the key (job_id), holds a short lease while a request waits on it, and never keeps the output once delivered.
alter table idempotency_keys add column job_id text;
-- The job's output went to a caller: a replay can no longer repeat it (generation keeps nothing).
alter table idempotency_keys add column output_delivered boolean not null default false;
comment on column idempotency_keys.locked_until is
  'An in-progress key is leased by the request waiting on its job until this instant; renewed while it waits, given up when its client leaves.';
