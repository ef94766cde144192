-- Catching up after an outage (issue 39): when an endpoint answers 2xx again, its deliveries
-- waiting on backoff are brought forward; each keeps why until its next attempt is logged.
alter table webhook_deliveries add column next_attempt_reason text;

-- Why an attempt ran when it did, when not on the retry schedule (null: on schedule).
alter table webhook_delivery_attempts add column reason text;

-- An endpoint's pending deliveries, oldest first: the catch-up looks for them at every 2xx, and an
-- endpoint's log of finished deliveries can be long.
create index webhook_deliveries_pending_idx on webhook_deliveries (endpoint_id, created_at, id)
  where status = 'pending';
