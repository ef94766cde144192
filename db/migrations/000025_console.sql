-- The web console, issue 13: rolled keys keep their previous secret for a chosen overlap; the request log's filters by key and by app stay index-served.

-- Rolling a key moves its secret here: calls with it keep working until previous_secret_expires_at
-- (at most 24 h after the roll), so a deployment can switch secrets without an outage.
alter table api_keys
  add column previous_secret_hash bytea unique,
  add column previous_secret_expires_at timestamptz,
  add constraint api_keys_previous_secret_check
    check ((previous_secret_hash is null) = (previous_secret_expires_at is null));

-- The console's request log filtered by key (and the keys list's "last used"): newest first within
-- one key, without walking the whole workspace's month.
create index request_logs_workspace_key_idx on request_logs (workspace_id, key_id, created_at, id);
-- Calls made by an OAuth app, filtered the same way.
create index request_logs_workspace_app_idx on request_logs (workspace_id, oauth_app_id, created_at, id)
  where oauth_app_id is not null;

-- The start of a receiver's answer to a webhook attempt (at most 512 bytes), shown in the console's
-- delivery log so a failing receiver's own explanation is visible.
alter table webhook_delivery_attempts
  add column response_excerpt text check (octet_length(response_excerpt) <= 2048);
