-- GET /status answers one snapshot for the whole fleet: the first api process to need a fresh one computes and stores it, every process serves the stored one until it is 30 seconds old.
create table status_snapshot (
  id boolean primary key default true check (id),
  body jsonb not null,
  computed_at timestamptz not null default now()
);
