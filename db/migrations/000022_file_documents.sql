-- Native documents: what a page, sheet or deck parsed into, its exports, and the PDF rendered from a deck.

-- One row per file that parsed as a native document (files.kind names the same kind). `revision`
-- counts the file's parses; a deck's PDF records the revision it was rendered from, so the PDF is
-- current iff pdf_revision = revision (a re-parse makes it stale without touching it).
create table file_documents (
  file_id text primary key,
  workspace_id text not null,
  kind text not null check (kind in ('page', 'sheet', 'deck')),
  revision integer not null default 1 check (revision >= 1),
  -- Object key of the parsed form (JSON): a deck's slides, a sheet's rows, a page's title.
  parsed_key text not null,
  -- Export format -> object key of its bytes (the upload itself for its own format).
  exports jsonb not null default '{}',
  -- What the parse found, for logs and callers: { slides } or { sheets, rows } or { title }.
  summary jsonb not null default '{}',
  pdf_key text,
  pdf_revision integer,
  pdf_pages integer check (pdf_pages >= 1),
  parsed_at timestamptz not null default now(),
  rendered_at timestamptz,
  -- The composite key keeps the row in its file's workspace.
  foreign key (workspace_id, file_id) references files (workspace_id, id) on delete cascade,
  check ((pdf_key is null) = (pdf_revision is null) and (pdf_key is null) = (pdf_pages is null)),
  check (kind = 'deck' or pdf_key is null)
);
