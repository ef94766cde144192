-- Replies to one task run one at a time, in message order, through a queue of our own instead of a graphile-worker named queue per task: only the reply whose turn it is has a queue job, so a task's backlog can never hide other jobs from the workers' batched fetch (issue 9).

-- graphile-worker's batched fetch (localQueue) takes the oldest `size` available jobs and then keeps
-- one per named queue: a task with that many replies waiting filled every batch with jobs it threw
-- away, so a job added after the backlog was not fetched until the backlog had shrunk below the batch
-- size, and a named queue unlocking announces nothing, so the backlog itself advanced one reply per
-- poll interval. Here a waiting reply is only a row: its queue job is added (which announces it on
-- jobs:insert) in the transaction that ends the reply before it.
create table task_reply_queue (
  task_id text not null references tasks on delete cascade,
  -- The number of the user message the reply answers: the queue's order (numbers are given under
  -- the task row's lock, so they are also commit order).
  message_seq bigint not null check (message_seq > 0),
  job_id text not null unique references jobs on delete cascade,
  -- The queue job to add when the reply's turn comes (shared/jobs.ts jobSpecs, written by the api).
  task_identifier text not null,
  payload json not null,
  max_attempts smallint not null check (max_attempts > 0),
  priority smallint not null,
  -- When its queue job was added. A task has at most one dispatched reply, its oldest, until it ends
  -- (replies in flight when this migration ran are all dispatched, see below).
  dispatched_at timestamptz,
  primary key (task_id, message_seq)
);

-- Replies already in flight keep the queue jobs (and the named queues) they have; they count as
-- dispatched, so a new message to their task waits until all of them have ended.
insert into task_reply_queue (task_id, message_seq, job_id, task_identifier, payload, max_attempts, priority,
                              dispatched_at)
select m.task_id, m.seq, j.id, 'task__reply', json_build_object('jobId', j.id), 5, 0, now()
from jobs j
join task_messages m on m.id = j.input ->> 'messageId' and m.task_id = j.input ->> 'taskId'
where j.type = 'task.reply' and j.status in ('queued', 'running');

-- Gives the task's oldest waiting reply its queue job when no reply of the task is dispatched.
-- Every change to a task's queue runs this under the task row's lock (the api holds it already: it
-- numbered the message), so concurrent messages and ending replies never dispatch twice or not at all.
create function task_reply_queue_advance(p_task_id text) returns void language plpgsql as $$
declare
  head task_reply_queue;
begin
  perform 1 from tasks where id = p_task_id for update;
  if not found then
    return; -- the task is being deleted, and its queue with it
  end if;
  if exists (select 1 from task_reply_queue where task_id = p_task_id and dispatched_at is not null) then
    return;
  end if;
  select * into head from task_reply_queue where task_id = p_task_id order by message_seq limit 1;
  if not found then
    return;
  end if;
  update task_reply_queue set dispatched_at = now() where job_id = head.job_id;
  -- The row records its queue job, as every job row does (the reconciler reads it).
  update jobs set queue_job_id = (graphile_worker.add_job(
    head.task_identifier, head.payload, max_attempts => head.max_attempts, priority => head.priority
  )).id
  where id = head.job_id;
end;
$$;

create function task_reply_queue_changed() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    perform task_reply_queue_advance(new.task_id);
  else
    perform task_reply_queue_advance(old.task_id);
  end if;
  return null;
end;
$$;
create trigger task_reply_queue_changed after insert or delete on task_reply_queue
  for each row execute function task_reply_queue_changed();

-- A reply leaves the queue in the transaction that ends its job, whoever ends it (its own attempt,
-- a failure, a cancellation, the reconciler), and the next reply of its task is dispatched there.
create function task_reply_ended() returns trigger language plpgsql as $$
begin
  delete from task_reply_queue where job_id = new.id;
  return null;
end;
$$;
create trigger task_reply_ended after update of status on jobs
  for each row
  when (new.type = 'task.reply' and old.status in ('queued', 'running') and new.status not in ('queued', 'running'))
  execute function task_reply_ended();
