-- Brain pages: the workspace's knowledge pages, searchable by everyone in it or private to one member.
create table brain_pages (
  id text primary key,
  workspace_id text not null references workspaces on delete cascade,
  slug text not null check (slug ~ '^[a-z0-9]+(-[a-z0-9]+)*$'),
  title text not null check (length(title) between 1 and 500),
  body text not null,
  -- null: every member of the workspace may see the page.
  private_to_member_id text references members on delete cascade,
  -- English stemming for recall on English text, the simple dictionary for every other language.
  search tsvector generated always as (
    setweight(to_tsvector('english', title), 'A') || setweight(to_tsvector('english', body), 'B')
    || setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', body), 'B')
  ) stored,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, slug)
);
create index brain_pages_search_idx on brain_pages using gin (search);
create index brain_pages_workspace_idx on brain_pages (workspace_id);
