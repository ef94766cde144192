-- Security round two, issue 20: a key's revocation records who revoked it; brain search corrects a misspelt word only from words of pages the caller may see.

-- Who revoked the key: the id of the member who revoked it in the console, or 'operator' for the
-- CLI's `key revoke`; null while the key is live, and for keys revoked before this was recorded.
-- Not a foreign key: the record of who revoked a key outlives that member (as request_logs keep
-- key ids), and 'operator' is no member.
alter table api_keys
  add column revoked_by text,
  add constraint api_keys_revoked_by_check check (
    revoked_by is null or (revoked_at is not null and (revoked_by = 'operator' or revoked_by like 'mem\_%'))
  );

-- The vocabulary typo correction draws from was the workspace's, private pages included: a
-- colleague's misspelt word was corrected to (or, spelt right, left uncorrected by) a word only a
-- private page has, telling them it exists. Each word now carries the audience of the page it came
-- from, as brain_pages.private_to_member_id says it: null for the workspace's shared pages (task
-- pages included), a member for pages private to that member. A word on both kinds of page has one
-- row per audience. A page's audience is set once, when it is written (nothing updates it), so a
-- word kept after its page changed or went stays with the audience that could see that page.
alter table brain_words
  drop constraint brain_words_pkey,
  add column private_to_member_id text references members on delete cascade;
-- An expression, not `unique nulls not distinct`: any PostgreSQL the platform runs on has it. It
-- also serves the "is this query word in the caller's vocabulary" check (workspace, word).
create unique index brain_words_workspace_word_audience_key
  on brain_words (workspace_id, word, coalesce(private_to_member_id, ''));

-- The nearest words of one audience of one workspace, in distance order, from the index alone:
-- btree_gist lets the GiST index lead with the equality columns (a trigram-only index walked the
-- nearest words of every workspace and audience, filtering the caller's out as it went).
create extension if not exists btree_gist;
drop index brain_words_trgm_idx;
create index brain_words_trgm_idx
  on brain_words using gist (workspace_id, private_to_member_id, word gist_trgm_ops);

create or replace function brain_words_collect() returns trigger language plpgsql as $$
begin
  insert into brain_words (workspace_id, private_to_member_id, word)
  select distinct p.workspace_id, p.private_to_member_id, w.lexeme
  from changed_pages p, unnest(to_tsvector('simple', p.title || ' ' || p.body)) w
  where length(w.lexeme) between 3 and 40 and w.lexeme ~ '^[[:alpha:]]+$'
  on conflict do nothing;
  return null;
end;
$$;

-- The rows so far do not say which page a word came from: rebuilt from the pages, by audience.
delete from brain_words;
insert into brain_words (workspace_id, private_to_member_id, word)
select distinct p.workspace_id, p.private_to_member_id, w.lexeme
from brain_pages p, unnest(to_tsvector('simple', p.title || ' ' || p.body)) w
where length(w.lexeme) between 3 and 40 and w.lexeme ~ '^[[:alpha:]]+$';
