-- Webhook secret rotation with an overlap (issue 38): after a rotation the replaced secret stays
-- here until `previous_secret_expires_at`, and every delivery made before then is signed with both
-- (the `webhook-signature` header takes several `v1,` signatures), so a receiver that has not yet
-- switched keeps accepting them. Whether it is still in force is judged on the database clock,
-- the same for every worker.
alter table webhook_endpoints
  add column previous_secret text,
  add column previous_secret_expires_at timestamptz,
  add constraint webhook_endpoints_previous_secret_format_check
    check (previous_secret ~ '^whsec_[A-Za-z0-9+/]+={0,2}$'),
  add constraint webhook_endpoints_previous_secret_pair_check
    check ((previous_secret is null) = (previous_secret_expires_at is null));
