-- jobs:update announces only the end of a job (succeeded, failed, cancelled): its listeners wait for that alone, and a notification per running mark cost every job a second NOTIFY at commit.
create or replace function jobs_notify() returns trigger language plpgsql as $$
begin
  if new.status is distinct from old.status and new.status in ('succeeded', 'failed', 'cancelled') then
    perform pg_notify('jobs:update', json_build_object(
      'id', new.id, 'status', new.status, 'cost', new.cost_minor,
      'result', case when new.status = 'succeeded' and octet_length(new.result::text) <= 6000 then new.result end
    )::text);
  end if;
  return null;
end;
$$;
