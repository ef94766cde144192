-- auth:changed carries a JSON payload like every other channel (shared/channels.ts), and a new key also announces itself: api processes cache unknown keys briefly, and a key created meanwhile must not stay unknown.
create or replace function auth_changed_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth:changed', json_build_object('table', tg_table_name)::text);
  return null;
end;
$$;

create trigger api_keys_auth_created after insert on api_keys
  for each statement execute function auth_changed_notify();
