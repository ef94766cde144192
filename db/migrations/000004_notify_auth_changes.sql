-- Announce changes that affect API key authentication, so api processes drop their cached key lookups at once.
create function auth_changed_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('auth:changed', tg_table_name);
  return null;
end;
$$;

create trigger api_keys_auth_changed after update or delete on api_keys
  for each statement execute function auth_changed_notify();
create trigger api_key_projects_auth_changed after insert or update or delete on api_key_projects
  for each statement execute function auth_changed_notify();
create trigger members_auth_changed after update or delete on members
  for each statement execute function auth_changed_notify();
create trigger projects_auth_changed after update or delete on projects
  for each statement execute function auth_changed_notify();
create trigger workspaces_auth_changed after update of currency, rate_limit_per_minute or delete on workspaces
  for each statement execute function auth_changed_notify();
