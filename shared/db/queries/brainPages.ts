import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

export type NewBrainPage = {
  id: string;
  workspaceId: string;
  slug: string;
  title: string;
  body: string;
  privateTo: string | null;
};

const insertedPageRow = z.object({ id: z.string(), slug: z.string() });

/** Inserts the page; when the slug is taken in the workspace, the next free `-2`, `-3`, … suffix is used. */
export function insertBrainPage(db: Db, page: NewBrainPage) {
  return db.one(sql.type(insertedPageRow)`
    insert into brain_pages (id, workspace_id, slug, title, body, private_to_member_id)
    select ${page.id}, ${page.workspaceId},
           case when n = 1 then ${page.slug} else ${page.slug} || '-' || n end,
           ${page.title}, ${page.body}, ${page.privateTo}
    from generate_series(1, 1000) n
    where not exists (
      select 1 from brain_pages p
      where p.workspace_id = ${page.workspaceId}
        and p.slug = case when n = 1 then ${page.slug} else ${page.slug} || '-' || n end
    )
    order by n
    limit 1
    returning id, slug
  `);
}

const hit = z.object({
  id: z.string(),
  slug: z.string(),
  title: z.string(),
  score: z.number(),
  snippet: z.string(),
});

/**
 * Full-text search over the pages `memberId` may see (the workspace's shared pages and the member's
 * own private ones), best first. Both English-stemmed and plain matches count.
 */
export function searchBrainPages(
  db: Db,
  input: { workspaceId: string; memberId: string; query: string; limit: number },
) {
  return db.any(sql.type(hit)`
    with q as (
      select websearch_to_tsquery('english', ${input.query}) || websearch_to_tsquery('simple', ${input.query}) as query
    )
    select p.id, p.slug, p.title,
           round(ts_rank(p.search, q.query)::numeric, 6)::float8 as score,
           ts_headline('english', p.body, q.query,
             'MaxWords=35, MinWords=12, MaxFragments=2, FragmentDelimiter=" … ", StartSel="", StopSel=""') as snippet
    from brain_pages p, q
    where p.workspace_id = ${input.workspaceId}
      and (p.private_to_member_id is null or p.private_to_member_id = ${input.memberId})
      and p.search @@ q.query
    order by score desc, p.updated_at desc, p.id
    limit ${input.limit}
  `);
}
