import { createSqlTag, type FragmentSqlToken } from 'slonik';
import { z } from 'zod';

/** Row schemas of statements that return nothing, or only an id (also for `sql.prepared`). */
export const noRows = z.object({}).strict();
export const idRow = z.object({ id: z.string() });

/**
 * The project's `sql` tag: `sql.type(schema)` for rows, `sql.typeAlias('void')` for statements.
 * `sql.prepared(name, schema)` for statements on the request path whose text never varies:
 * PostgreSQL then parses and plans them once per connection instead of on every call. Their generic
 * plans follow the table statistics autovacuum keeps: on a brand-new database, until its first
 * ANALYZE (within a minute of the first writes), a lookup planned against empty tables may scan.
 * Through a transaction pooler (DATABASE_POOLER=transaction) the names are dropped in the driver
 * (transactionPooler.ts) and the statements run unnamed; nothing here changes.
 */
export const sql = createSqlTag({
  typeAliases: {
    id: idRow,
    void: noRows,
  },
});

/**
 * A row schema's keys as a statement's column list, in the schema's order (`"d"."id", …` with an
 * alias, where a join makes bare names ambiguous), so the list cannot drift from the schema.
 * Rendered here, once, to fixed text, so `sql.prepared` statements using it stay fixed.
 */
export function columnsOf(row: z.ZodObject, alias?: string): FragmentSqlToken {
  const names = Object.keys(row.shape).map((key) =>
    sql.identifier(alias === undefined ? [key] : [alias, key]),
  );
  return sql.fragment`${sql.join(names, sql.fragment`, `)}`;
}

export type { DatabasePool, DatabaseTransactionConnection } from 'slonik';
export type { CommonQueryMethods as Db } from 'slonik';

/**
 * A JSON value bound as text, for `${jsonText(v)}::jsonb` in the statements every queued request
 * runs: sql.jsonb serializes with a key-sorting stringify and then scans every string for text
 * PostgreSQL cannot store, which there costs more than the statement's execution. Only for values
 * already known to be storable (request input checked at the edge, provider output sanitized; see
 * shared/primitives/storableText.ts); PostgreSQL still refuses anything else.
 */
export const jsonText = (value: unknown): string => JSON.stringify(value);

/** Timestamps come back as ISO strings (see the type parsers in pool.ts). */
export const isoTimestamp = z.string();
