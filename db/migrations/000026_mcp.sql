-- The remote MCP server, issue 12: apps that register themselves (RFC 7591 dynamic client
-- registration, Client ID Metadata Documents) and tokens bound to a resource (RFC 8707).

-- A self-registered app belongs to no project or workspace: the person who consents picks the
-- workspace, and its tokens act in that workspace's active projects. It starts unverified.
-- 'metadata': the client_id is the https URL of the app's own metadata document, kept here once
-- fetched (a grant needs an app row) and refreshed when the document is fetched again.
alter table oauth_apps alter column project_id drop not null;
alter table oauth_apps alter column workspace_id drop not null;
alter table oauth_apps add column registration text not null default 'operator'
  check (registration in ('operator', 'dynamic', 'metadata'));
alter table oauth_apps add constraint oauth_apps_owner_check
  check ((registration = 'operator') = (project_id is not null and workspace_id is not null));
alter table oauth_apps drop constraint oauth_apps_client_id_check;
alter table oauth_apps add constraint oauth_apps_client_id_check
  check (client_id ~ '^svc_oc_[0-9A-Za-z]+$' or (registration = 'metadata' and client_id ~ '^https?://'));

-- RFC 8707 resource indicators: the resource a code was asked for, and the one its tokens are for.
-- Null = no resource named: the token works on the whole API, /mcp included.
alter table oauth_codes add column resource text;
alter table oauth_tokens add column resource text;
