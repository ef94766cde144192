-- Secrets shown once in the console (a new or rolled key, a webhook's or an app's secret) wait here,
-- sealed, between the form's 303 redirect and the one page that shows them: a reload finds the row
-- spent and says so, and never runs the form again (issue 23). The seal's key comes from a cookie of
-- the browser that posted the form, so this table alone reveals nothing.
create table secret_reveals (
  id text not null,
  session_id text not null,
  member_id text not null,
  sealed bytea,
  expires_at timestamptz not null,
  shown_at timestamptz,
  created_at timestamptz not null default now(),
  constraint secret_reveals_pkey primary key (id),
  constraint secret_reveals_session_id_fkey foreign key (session_id) references browser_sessions (id) on delete cascade,
  constraint secret_reveals_spent_check check ((sealed is null) = (shown_at is not null))
);
create index secret_reveals_session_idx on secret_reveals (session_id);
