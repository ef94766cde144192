import { z } from 'zod';

import { type Db, sql } from '../sql.ts';

const secretRow = z.object({ secret: z.instanceof(Buffer) });

/**
 * A secret every process on this database shares (created by migration 000003).
 * @throws NotFoundError when the secret does not exist (the database is not migrated).
 */
export function findServerSecret(db: Db, name: string): Promise<Buffer> {
  return db.oneFirst(sql.type(secretRow)`
    select secret from server_secrets where name = ${name}
  `);
}
