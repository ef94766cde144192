-- The brain, issue 10: pages synthesised from tasks, and search that forgives typos.

-- Trigram similarity (ships with PostgreSQL's contrib, and with the embedded server).
create extension if not exists pg_trgm;

-- A synthesised page belongs to its source task: one page per task, updated in place (its slug kept),
-- deleted with the task. It carries the task's workspace (the composite key guarantees it), because
-- a task is visible to every member of its workspace (GET /tasks/{id} checks only the workspace), so
-- its page is too; a page private to one member is an operator page and never a task's.
alter table brain_pages
  add column source_task_id text,
  -- The task's last message number the page was synthesised from (a re-run with nothing new is a no-op).
  add column synthesized_through_seq bigint,
  -- How many times the page was written: 1 for an operator page, one more per synthesis.
  add column revision integer not null default 1,
  add constraint brain_pages_source_task_id_key unique (source_task_id),
  add constraint brain_pages_source_task_fkey foreign key (workspace_id, source_task_id)
    references tasks (workspace_id, id) on delete cascade,
  add constraint brain_pages_source_task_check check (
    source_task_id is null or (private_to_member_id is null and synthesized_through_seq is not null)
  );

-- Each workspace's vocabulary: the words of its pages (as the simple dictionary reads them). A
-- misspelt query word is corrected to its nearest vocabulary words by trigram distance, a lookup in
-- a table of thousands of short words, where trigram matching against 100,000 page bodies would
-- read posting lists as long as the table for every common trigram. Words are kept when their
-- pages change or go: a stale word only widens a query that then matches nothing more.
create table brain_words (
  workspace_id text not null references workspaces on delete cascade,
  word text not null,
  primary key (workspace_id, word)
);
-- GiST, not GIN: it walks the words nearest to a query word in distance order (the `<->` ordering with
-- a limit), 0.4 ms per word at 5,000 words where GIN's `%` filter fed a sort after a scan (3.8 ms).
create index brain_words_trgm_idx on brain_words using gist (word gist_trgm_ops);

create function brain_words_collect() returns trigger language plpgsql as $$
begin
  insert into brain_words (workspace_id, word)
  select distinct p.workspace_id, w.lexeme
  from changed_pages p, unnest(to_tsvector('simple', p.title || ' ' || p.body)) w
  where length(w.lexeme) between 3 and 40 and w.lexeme ~ '^[[:alpha:]]+$'
  on conflict do nothing;
  return null;
end;
$$;

-- Statement triggers with transition tables, so a set-based insert collects its words in one pass.
create trigger brain_words_on_insert after insert on brain_pages
  referencing new table as changed_pages for each statement execute function brain_words_collect();
create trigger brain_words_on_update after update on brain_pages
  referencing new table as changed_pages for each statement execute function brain_words_collect();

