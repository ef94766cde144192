import { z } from 'zod';

import { sql } from '../sql.ts';

/**
 * A page of a newest-first list ordered by (created_at, id): the position of the row shown last on
 * the page before (none on the first page), and how many rows to read.
 */
export type ListPage = { before?: { at: string; id: string }; limit: number };

/** `alias`'s column, or the only table's when there is no alias. */
const column = (alias: string | undefined, name: string) => sql.identifier(alias ? [alias, name] : [name]);

/** `and (created_at, id) < before`: the rows after the page before; nothing on the first page. */
export function afterPosition(page: ListPage, alias?: string) {
  if (!page.before) return sql.fragment``;
  return sql.fragment`and (${column(alias, 'created_at')}, ${column(alias, 'id')})
                       < (${page.before.at}::timestamptz, ${page.before.id})`;
}

/** `order by created_at desc, id desc limit n`: a page's rows in the order its position counts them in. */
export function newestFirst(page: { limit: number }, alias?: string) {
  return sql.fragment`order by ${column(alias, 'created_at')} desc, ${column(alias, 'id')} desc
                      limit ${page.limit}`;
}

/**
 * A row's created_at as a page cursor's time, `cursor_at`: text to the microsecond, since a JS Date
 * would drop the last three digits and the next page would repeat or skip rows.
 */
export function cursorAt(alias?: string) {
  return sql.fragment`to_char(${column(alias, 'created_at')} at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_at`;
}

/** The type of the `cursor_at` column cursorAt() selects, for a listed row's schema. */
export const cursorAtText = z.string();
