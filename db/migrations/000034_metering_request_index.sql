-- The request log shows each call's cost as its metering records charged (issue 34): a listed call's
-- records are found by workspace and request id. Built on every monthly partition; metering inserts
-- wait while it builds.
create index metering_records_request_idx on metering_records (workspace_id, request_id)
  where request_id is not null;
