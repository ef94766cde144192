-- The model gateway's circuit breakers (issue 24): one row per provider that has failed, shared by
-- every worker process so they agree on which providers are skipped. A provider without a row is
-- closed (calls go to it).
create table provider_circuits (
  provider text primary key,
  -- Consecutive failures since window_started_at; a success resets both.
  failures integer not null default 0 check (failures >= 0),
  window_started_at timestamptz,
  -- Skipped until then (the cooldown); once past, one trial call is let through (half-open).
  open_until timestamptz,
  -- The process making the half-open trial call holds it until then (its timeout).
  trial_until timestamptz,
  -- The provider asked for rest (Retry-After): skipped until then, whatever the count.
  resting_until timestamptz,
  updated_at timestamptz not null default now()
);

-- Which provider and model answered a billed call (the route entry it was priced at); null for
-- test keys' fixtures and for work no model did (OCR, video, decks).
alter table metering_records
  add column provider text,
  add column model text;
