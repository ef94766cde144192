-- A job's row is updated two or three times in its life (started, finished, its delivered output
-- dropped). An update that changes no indexed column stays on its page without new index entries
-- (a HOT update), provided the page has room: the reconciler's index therefore keys on completed_at,
-- which only the finish sets, instead of status, which every start changes; and pages are filled to
-- 80% on insert, leaving room for the new versions.
drop index jobs_unfinished_idx;
create index jobs_unfinished_idx on jobs (created_at) where completed_at is null;
alter table jobs set (fillfactor = 80);
