-- Every live call of a workspace takes the workspace's balance row lock to reserve and to settle, and
-- holds it until its transaction commits. Taken statement by statement from the api, that was about
-- eight round trips on a busy event loop per reservation, so one workspace ran ~60 live calls a
-- second however many processes served it. Each money step is now one statement (these functions,
-- in the lock order the steps always used: workspace, then the key's month), and a reservation is
-- the last statement before its commit.

-- The reservation is written after the job that names it, in the same transaction.
alter table jobs alter constraint jobs_hold_id_fkey deferrable initially deferred;

-- Reserves up to p_max_minor (at least 1) for one call: cut to the workspace's available balance and
-- the key's monthly cap (p_cap_minor, null: none). Refuses, writing nothing, with the error code.
create function reserve_credit(
  p_hold_id text,
  p_workspace_id text,
  p_project_id text,
  p_key_id text,
  p_oauth_app_id text,
  p_operation text,
  p_max_minor bigint,
  p_cap_minor bigint,
  p_request_id text
) returns table (o_amount_minor bigint, o_refusal text)
language plpgsql as $$
declare
  v_month date := (date_trunc('month', now() at time zone 'utc'))::date;
  v_available bigint;
  v_used bigint;
  v_amount bigint;
begin
  select balance_minor - reserved_minor into v_available
  from workspaces where id = p_workspace_id for no key update;
  if not found then
    raise exception 'workspace % does not exist', p_workspace_id using errcode = 'no_data_found';
  end if;
  if v_available <= 0 then
    return query select 0::bigint, 'insufficient_credits'::text;
    return;
  end if;
  v_amount := least(greatest(1, p_max_minor), v_available);
  if p_key_id is not null then
    insert into key_monthly_spend (key_id, month) values (p_key_id, v_month) on conflict do nothing;
    select spent_minor + reserved_minor into v_used
    from key_monthly_spend where key_id = p_key_id and month = v_month for update;
    if p_cap_minor is not null then
      if p_cap_minor - v_used <= 0 then
        return query select 0::bigint, 'key_spend_limit_reached'::text;
        return;
      end if;
      v_amount := least(v_amount, p_cap_minor - v_used);
    end if;
    update key_monthly_spend set reserved_minor = reserved_minor + v_amount
    where key_id = p_key_id and month = v_month;
  end if;
  update workspaces set reserved_minor = reserved_minor + v_amount where id = p_workspace_id;
  insert into credit_holds (id, workspace_id, project_id, key_id, oauth_app_id, operation, amount_minor,
                            month, request_id)
  values (p_hold_id, p_workspace_id, p_project_id, p_key_id, p_oauth_app_id, p_operation, v_amount,
          v_month, p_request_id);
  return query select v_amount, null::text;
end
$$;

-- Closes a held hold (the caller has locked it): p_charge_minor leaves the balance and the key's
-- month, the whole hold leaves reserved. False when the hold was not held.
create function close_credit_hold(p_hold_id text, p_charge_minor bigint, p_status text)
returns boolean
language plpgsql as $$
declare
  v_hold credit_holds%rowtype;
begin
  update credit_holds set status = p_status, closed_at = now()
  where id = p_hold_id and status = 'held'
  returning * into v_hold;
  if not found then
    return false;
  end if;
  update workspaces
  set balance_minor = balance_minor - p_charge_minor, reserved_minor = reserved_minor - v_hold.amount_minor
  where id = v_hold.workspace_id;
  if v_hold.key_id is not null then
    update key_monthly_spend
    set spent_minor = spent_minor + p_charge_minor, reserved_minor = reserved_minor - v_hold.amount_minor
    where key_id = v_hold.key_id and month = v_hold.month;
  end if;
  return true;
end
$$;
