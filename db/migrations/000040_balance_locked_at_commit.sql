-- Every live call takes its workspace's balance row and its key's month row twice, to reserve and to
-- settle. Taken by a statement, such a lock lasts until the client's COMMIT arrives, a round trip on
-- a busy event loop: under 32 concurrent live calls of one workspace each waited ~120 ms for each of
-- the two locks, and the workspace ran at half the rate it ran with the locks taken out. Taken by a
-- deferred constraint trigger, a lock is taken inside COMMIT and held for the trigger's few
-- statements and the commit's flush only. The rules are the same as reserve_credit's and
-- close_credit_hold's (000038); only when the row locks are taken moves.

-- What a hold asked to be reserved at commit needs then: the key's monthly cap it was made under.
alter table credit_holds add column reserve_at_commit boolean not null default false;
alter table credit_holds add column cap_minor bigint;
-- The charge a closed hold moved out of the balance (null: closed before this migration, or open).
alter table credit_holds add column charge_minor bigint check (charge_minor >= 0);

-- At commit, reserves what a hold inserted with reserve_at_commit asks for (at least 1): cut to the
-- workspace's available balance and the key's cap, or the commit fails with SQLSTATE SVC01
-- (insufficient_credits) or SVC02 (key_spend_limit_reached) and its transaction leaves nothing.
create function reserve_credit_hold_at_commit() returns trigger
language plpgsql as $$
declare
  v_hold credit_holds%rowtype;
  v_available bigint;
  v_used bigint;
  v_amount bigint;
begin
  select * into v_hold from credit_holds where id = new.id;
  if not found or not v_hold.reserve_at_commit then
    return null;
  end if;
  select balance_minor - reserved_minor into v_available
  from workspaces where id = v_hold.workspace_id for no key update;
  if v_available <= 0 then
    raise exception 'insufficient_credits' using errcode = 'SVC01';
  end if;
  v_amount := least(greatest(1, v_hold.amount_minor), v_available);
  if v_hold.key_id is not null then
    insert into key_monthly_spend (key_id, month) values (v_hold.key_id, v_hold.month) on conflict do nothing;
    select spent_minor + reserved_minor into v_used
    from key_monthly_spend where key_id = v_hold.key_id and month = v_hold.month for update;
    if v_hold.cap_minor is not null then
      if v_hold.cap_minor - v_used <= 0 then
        raise exception 'key_spend_limit_reached' using errcode = 'SVC02';
      end if;
      v_amount := least(v_amount, v_hold.cap_minor - v_used);
    end if;
    update key_monthly_spend set reserved_minor = reserved_minor + v_amount
    where key_id = v_hold.key_id and month = v_hold.month;
  end if;
  update workspaces set reserved_minor = reserved_minor + v_amount where id = v_hold.workspace_id;
  update credit_holds set amount_minor = v_amount, reserve_at_commit = false where id = v_hold.id;
  return null;
end
$$;

create constraint trigger credit_holds_reserve_at_commit
after insert on credit_holds deferrable initially deferred
for each row when (new.reserve_at_commit)
execute function reserve_credit_hold_at_commit();

-- At commit, moves a closed hold's money: its charge (at most what it holds, which a reservation at
-- commit in the same transaction may have cut) out of the balance and into the key's month, the
-- whole hold out of reserved. Reads the row as it is then, not as the update left it.
create function apply_credit_hold_close() returns trigger
language plpgsql as $$
declare
  v_hold credit_holds%rowtype;
  v_charge bigint;
begin
  select * into v_hold from credit_holds where id = new.id;
  if not found then
    return null;
  end if;
  v_charge := least(coalesce(v_hold.charge_minor, 0), v_hold.amount_minor);
  update workspaces
  set balance_minor = balance_minor - v_charge, reserved_minor = reserved_minor - v_hold.amount_minor
  where id = v_hold.workspace_id;
  if v_hold.key_id is not null then
    update key_monthly_spend
    set spent_minor = spent_minor + v_charge, reserved_minor = reserved_minor - v_hold.amount_minor
    where key_id = v_hold.key_id and month = v_hold.month;
  end if;
  return null;
end
$$;

create constraint trigger credit_holds_close_at_commit
after update of status on credit_holds deferrable initially deferred
for each row when (old.status = 'held' and new.status <> 'held')
execute function apply_credit_hold_close();

-- Closes a held hold (the caller has locked it); its money moves at commit (above). False when the
-- hold was not held.
create or replace function close_credit_hold(p_hold_id text, p_charge_minor bigint, p_status text)
returns boolean
language plpgsql as $$
begin
  update credit_holds set status = p_status, closed_at = now(), charge_minor = p_charge_minor
  where id = p_hold_id and status = 'held';
  return found;
end
$$;
