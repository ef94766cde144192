/**
 * A console list's position: the last row's (created_at, id), opaque in the URL. Unsigned on purpose:
 * every query is bound to the session's workspace, so a forged cursor can only skip within it.
 */
export function encodePageCursor(at: string, id: string | number): string {
  return Buffer.from(JSON.stringify([at, id])).toString('base64url');
}

export function decodePageCursor(value: string): { at: string; id: string } | undefined {
  if (!value) return undefined;
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (
      Array.isArray(parsed) &&
      typeof parsed[0] === 'string' &&
      !Number.isNaN(Date.parse(parsed[0])) &&
      (typeof parsed[1] === 'string' || typeof parsed[1] === 'number')
    ) {
      return { at: parsed[0], id: String(parsed[1]) };
    }
  } catch {
    // An unreadable cursor is the first page.
  }
  return undefined;
}

export const pageSize = 50;

/**
 * A page of a list read with `limit: pageSize + 1`: its rows, and the cursor of the next page (null
 * on the last), the extra row only telling that there is one.
 */
export function pageOf<T extends { cursor_at: string; id: string | number }>(
  rows: readonly T[],
): { items: T[]; next: string | null } {
  return pageBy(rows, (row) => [row.cursor_at, row.id]);
}

/**
 * `pageOf` for a list ordered by another position than (created_at, id), such as a task's messages
 * by sequence number: `position` gives a row's place as the cursor's (time, id) pair.
 */
export function pageBy<T>(
  rows: readonly T[],
  position: (row: T) => readonly [string, string | number],
): { items: T[]; next: string | null } {
  const items = rows.slice(0, pageSize);
  const last = items.at(-1);
  return { items, next: rows.length > pageSize && last ? encodePageCursor(...position(last)) : null };
}

/** The position a list query reads after, as `decodePageCursor` gives it. */
export type PageRequest = { before: { at: string; id: string } | undefined; limit: number };

/**
 * One page of a console list: `list` reads `limit` rows after `before` (one more than a page, so
 * the page knows whether another follows), from the page's cursor as the URL carries it.
 */
export async function readPage<T extends { cursor_at: string; id: string | number }>(
  cursor: string,
  list: (page: PageRequest) => Promise<readonly T[]>,
): Promise<{ items: T[]; next: string | null }> {
  return pageOf(await list({ before: decodePageCursor(cursor), limit: pageSize + 1 }));
}
