import { type Channel, type ChannelPayload } from '../../realtime/channels.ts';
import { type Db, sql } from '../sql.ts';

/**
 * NOTIFY on `channel` with a payload of its schema (shared/realtime/channels.ts). Inside a transaction the
 * notification is delivered iff it commits, and in commit order with the other notifications of the
 * server (listeners rely on that order).
 */
export async function notify<C extends Channel>(db: Db, channel: C, payload: ChannelPayload<C>): Promise<void> {
  await db.query(sql.typeAlias('void')`select from pg_notify(${channel}, ${JSON.stringify(payload)})`);
}
