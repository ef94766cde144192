import { type DomainEvent, insertEvent } from '../db/queries/events.ts';
import type { Db } from '../db/sql.ts';
import { newId } from '../primitives/ids.ts';
import { enqueueWebhookDeliveries } from '../webhooks/fanout.ts';

/**
 * Records a domain event in the caller's transaction, with a webhook delivery (and its first
 * attempt's job) per subscribed endpoint: the event and its deliveries exist iff the change that
 * caused them commits.
 */
export async function recordEvent(tx: Db, event: DomainEvent): Promise<string> {
  const row = await insertEvent(tx, newId('evt'), event);
  await enqueueWebhookDeliveries(tx, { ...event, id: row.id });
  return row.id;
}
