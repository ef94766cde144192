import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';
import { afterPosition, cursorAt, cursorAtText, type ListPage, newestFirst } from './listPage.ts';

export type NewBrainPage = {
  id: string;
  workspaceId: string;
  slug: string;
  title: string;
  body: string;
  privateTo: string | null;
};

const insertedPageRow = z.object({ id: z.string(), slug: z.string() });

/**
 * Takes the workspace's page-writing lock until the transaction ends (a transaction-level advisory
 * lock on a hash of the workspace id). Both page writes below decide from what they see (the first
 * free slug; whether the task has a page): two writers that looked before either committed picked the
 * same slug, or both inserted the task's page, and the second insert failed on a unique key. Under
 * this lock the second writer's statement starts after the first commits, and sees its page.
 */
export async function lockWorkspaceBrainPages(tx: Db, workspaceId: string): Promise<void> {
  await tx.query(sql.typeAlias('void')`
    select from pg_advisory_xact_lock(hashtextextended(${`brain_pages:${workspaceId}`}, 0))
  `);
}

/** The workspace's first free slug among `slug`, `slug-2`, `slug-3`, … (one row, column `slug`). */
function firstFreeSlug(workspaceId: string, slug: string) {
  return sql.fragment`(
    select c.slug from generate_series(1, 1000) n,
      lateral (select case when n = 1 then ${slug} else ${slug} || '-' || n end as slug) c
    where not exists (select 1 from brain_pages p where p.workspace_id = ${workspaceId} and p.slug = c.slug)
    order by n
    limit 1
  )`;
}

/**
 * Inserts the page; when the slug is taken in the workspace, the next free `-2`, `-3`, … suffix is
 * used. Run under lockWorkspaceBrainPages (see shared/brain/pages.ts).
 */
export function insertBrainPage(db: Db, page: NewBrainPage) {
  return db.one(sql.type(insertedPageRow)`
    insert into brain_pages (id, workspace_id, slug, title, body, private_to_member_id)
    select ${page.id}, ${page.workspaceId}, free.slug, ${page.title}, ${page.body}, ${page.privateTo}
    from ${firstFreeSlug(page.workspaceId, page.slug)} as free
    returning id, slug
  `);
}

export type TaskPage = {
  id: string;
  workspaceId: string;
  taskId: string;
  slug: string;
  title: string;
  body: string;
  throughSeq: number;
};

const taskPageRow = z.object({ id: z.string(), slug: z.string(), revision: z.number() });

/**
 * Writes the page of a task: a new page takes the first free slug (as insertBrainPage), an existing
 * one is updated in place and keeps its slug. A synthesis no newer than the page's (a `throughSeq`
 * not above it) changes nothing and returns null. Run under lockWorkspaceBrainPages.
 */
export function upsertTaskPage(db: Db, page: TaskPage) {
  return db.maybeOne(sql.type(taskPageRow)`
    insert into brain_pages (id, workspace_id, slug, title, body, source_task_id, synthesized_through_seq)
    select ${page.id}, ${page.workspaceId}, free.slug, ${page.title}, ${page.body}, ${page.taskId},
           ${page.throughSeq}
    from ${firstFreeSlug(page.workspaceId, page.slug)} as free
    on conflict (source_task_id) do update
      set title = excluded.title, body = excluded.body,
          synthesized_through_seq = excluded.synthesized_through_seq,
          revision = brain_pages.revision + 1, updated_at = now()
      where brain_pages.synthesized_through_seq < excluded.synthesized_through_seq
    returning id, slug, revision
  `);
}

/** The task's page, when it has one: how far it was synthesised. */
export function findTaskPage(db: Db, taskId: string) {
  return db.maybeOne(sql.type(
    z.object({ id: z.string(), slug: z.string(), revision: z.number(), synthesized_through_seq: z.number() }),
  )`
    select id, slug, revision, synthesized_through_seq from brain_pages where source_task_id = ${taskId}
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
 * Full-text search over the pages `memberId` may see (the workspace's shared pages, its tasks'
 * pages and the member's own private ones), best first. The query matches English-stemmed and
 * plain; each query word not in the caller's vocabulary (the words of the pages they may see) is
 * also replaced by its nearest words of that vocabulary by trigram similarity, so "quartely revnue"
 * finds "quarterly revenue" and no correction hints at a word of a page the caller cannot see. The score
 * is the full-text rank plus the trigram similarity of the query to the title; the snippet is
 * ts_headline over the body, computed for the returned rows only.
 */
export function searchBrainPages(
  db: Db,
  input: { workspaceId: string; memberId: string; query: string; limit: number },
) {
  return db.any(sql.type(hit)`
    with words as (
      -- The query's words as websearch_to_tsquery reads them; a negated word ("-salary") stays negated.
      select distinct m[1] is not null as negated, m[2] as word
      from regexp_matches(websearch_to_tsquery('simple', ${input.query})::text, '(!)?''([^'']+)''', 'g') m
      where length(m[2]) between 3 and 40 and m[2] ~ '^[[:alnum:]]+$'
      limit 16
    ),
    corrected as materialized (
      select string_agg(
               case when words.negated then '!' || quote_literal(words.word)
                    else coalesce(fix.alternatives, quote_literal(words.word)) end, ' & ') as text
      from words
      left join lateral (
        select '(' || string_agg(quote_literal(v.word), ' | ') || ')' as alternatives
        from (
          -- The nearest three of the caller's vocabulary: the shared pages' words and the caller's
          -- private pages' words, each an index walk in distance order; a word in both counts once.
          select n.word from (
            (
              select b.word, b.word <-> words.word as distance from brain_words b
              where b.workspace_id = ${input.workspaceId} and b.private_to_member_id is null
                and b.word % words.word
              order by b.word <-> words.word, b.word
              limit 3
            )
            union all
            (
              select b.word, b.word <-> words.word as distance from brain_words b
              where b.workspace_id = ${input.workspaceId} and b.private_to_member_id = ${input.memberId}
                and b.word % words.word
              order by b.word <-> words.word, b.word
              limit 3
            )
          ) n
          group by n.word
          order by min(n.distance), n.word
          limit 3
        ) v
        having not words.negated and not exists (
          select 1 from brain_words e
          where e.workspace_id = ${input.workspaceId} and e.word = words.word
            and coalesce(e.private_to_member_id, '') in ('', ${input.memberId})
        ) and count(*) > 0
      ) fix on true
      having bool_or(fix.alternatives is not null)
    ),
    -- Materialised: inlined, the corrections (a trigram scan of the vocabulary per word) ran once per use.
    q as materialized (
      select websearch_to_tsquery('english', ${input.query})
             || websearch_to_tsquery('simple', ${input.query})
             || coalesce((select to_tsquery('simple', corrected.text) from corrected), ''::tsquery) as query
    ),
    ranked as (
      select p.id, p.slug, p.title, p.body, p.updated_at, q.query,
             ts_rank(p.search, q.query) + similarity(p.title, ${input.query}) as rank
      from brain_pages p, q
      where p.workspace_id = ${input.workspaceId}
        and (p.private_to_member_id is null or p.private_to_member_id = ${input.memberId})
        and p.search @@ q.query
      order by rank desc, p.updated_at desc, p.id
      limit ${input.limit}
    )
    select id, slug, title, round(rank::numeric, 6)::float8 as score,
           ts_headline('english', body, query,
             'MaxWords=35, MinWords=12, MaxFragments=2, FragmentDelimiter=" … ", StartSel="", StopSel=""') as snippet
    from ranked
    order by rank desc, updated_at desc, id
  `);
}

const visiblePageRow = z.object({
  id: z.string(),
  slug: z.string(),
  title: z.string(),
  body: z.string(),
  private: z.boolean(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
});

/** Who reads: a page is visible to a member when it is shared (private to nobody) or private to them. */
export type PageReader = { workspaceId: string; memberId: string };

const visibleTo = (reader: PageReader, alias: string) =>
  sql.fragment`${sql.identifier([alias, 'workspace_id'])} = ${reader.workspaceId}
    and (${sql.identifier([alias, 'private_to_member_id'])} is null
         or ${sql.identifier([alias, 'private_to_member_id'])} = ${reader.memberId})`;

/** The page with this slug when `reader` may see it (a colleague's private page reads as absent). */
export function findVisibleBrainPage(db: Db, reader: PageReader, slug: string) {
  return db.maybeOne(sql.type(visiblePageRow)`
    select p.id, p.slug, p.title, p.body, p.private_to_member_id is not null as private,
           p.created_at, p.updated_at
    from brain_pages p
    where ${visibleTo(reader, 'p')} and p.slug = ${slug}
  `);
}

const listedPageRow = z.object({
  id: z.string(),
  slug: z.string(),
  title: z.string(),
  size: z.number(),
  created_at: isoTimestamp,
  updated_at: isoTimestamp,
  cursor_at: cursorAtText,
});

/** The pages `reader` may see, newest first, a page after (created_at, id). */
export function listVisibleBrainPages(db: Db, reader: PageReader, page: ListPage) {
  return db.any(sql.type(listedPageRow)`
    select p.id, p.slug, p.title, octet_length(p.body) as size, p.created_at, p.updated_at,
           ${cursorAt('p')}
    from brain_pages p
    where ${visibleTo(reader, 'p')} ${afterPosition(page, 'p')}
    ${newestFirst(page, 'p')}
  `);
}

/** Slugs of pages `reader` may see that start with `prefix`, alphabetically (completion). */
export function completeVisibleBrainSlugs(db: Db, reader: PageReader, prefix: string, limit: number) {
  return db.anyFirst(sql.type(z.object({ slug: z.string() }))`
    select p.slug from brain_pages p
    where ${visibleTo(reader, 'p')} and starts_with(p.slug, ${prefix})
    order by p.slug
    limit ${limit}
  `);
}
