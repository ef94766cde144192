-- Every 2xx looks for the endpoint's deliveries held by backoff (issue 39): with a backlog of
-- thousands of first attempts pending, a scan of the pending index read them all at each delivery.
-- Only deliveries that have failed at least once can be held.
create index webhook_deliveries_held_idx on webhook_deliveries (endpoint_id)
  where status = 'pending' and attempts > 0;
