import { type Db, sql } from '../sql.ts';

/**
 * NOTIFY on `channel`. Inside a transaction the notification is delivered iff it commits, and in
 * commit order with the other notifications of the server (listeners rely on that order).
 */
export async function notify(db: Db, channel: string, payload: Record<string, unknown>): Promise<void> {
  await db.query(sql.typeAlias('void')`select from pg_notify(${channel}, ${JSON.stringify(payload)})`);
}
