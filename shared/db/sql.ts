import { createSqlTag } from 'slonik';
import { z } from 'zod';

/** The project's `sql` tag: `sql.type(schema)` for rows, `sql.typeAlias('void')` for statements. */
export const sql = createSqlTag({
  typeAliases: {
    id: z.object({ id: z.string() }),
    void: z.object({}).strict(),
  },
});

export type { DatabasePool, DatabaseTransactionConnection } from 'slonik';
export type { CommonQueryMethods as Db } from 'slonik';

/** Timestamps come back as ISO strings (see the type parsers in pool.ts). */
export const isoTimestamp = z.string();
