-- A job's row is inserted small (its input) and finished large (its result): the finish is not a
-- HOT update (completed_at decides jobs_unfinished_idx), but its new version still goes on the same
-- heap page when the page has room, which saves the write-ahead log of touching a second page.
-- Rows created in a burst fill their pages to the fillfactor before any of them finishes, so 80%
-- left room for a few finishes per page only; half a page holds every row's finished version.
alter table jobs set (fillfactor = 50);
