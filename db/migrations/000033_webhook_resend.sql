-- Resending (issue 39): an endpoint's failed deliveries since a time, oldest first, found without
-- reading its succeeded ones (thirty days of a busy endpoint's deliveries are kept).
create index webhook_deliveries_failed_idx on webhook_deliveries (endpoint_id, created_at, id)
  where status = 'failed';
