-- Every job row knows its graphile-worker job, so a reconciler can find jobs the queue will never run again (attempts used up, or gone) and bring them and their credit holds to an end.
alter table jobs add column queue_job_id bigint;

-- The reconciler's candidates: few rows at any time (unfinished jobs), so the index stays small.
create index jobs_unfinished_idx on jobs (created_at) where status in ('queued', 'running');
-- Stranded holds are found through the jobs that carry them.
create index jobs_hold_idx on jobs (hold_id) where hold_id is not null;

-- Unfinished jobs of an existing install get their queue job's id (once, from the queue's own table:
-- its public view does not carry payloads). A fresh database has no graphile_worker schema yet.
do $$
begin
  if to_regclass('graphile_worker._private_jobs') is not null then
    update jobs j set queue_job_id = q.id
    from graphile_worker._private_jobs q
    where j.status in ('queued', 'running') and q.payload ->> 'jobId' = j.id;
  end if;
end;
$$;
