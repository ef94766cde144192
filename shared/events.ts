import { z } from 'zod';

import { type Db, sql } from './db/sql.ts';
import { newId } from './ids.ts';
import { enqueueWebhookDeliveries } from './webhooks/fanout.ts';

/** Event kinds the service emits (spec "Webhooks"). */
export type EventType = 'task.message.created' | 'video.ready' | 'job.succeeded' | 'job.failed';

export type DomainEvent = {
  workspaceId: string;
  projectId: string | null;
  type: EventType;
  data: Record<string, unknown>;
};

const eventIdRow = z.object({ id: z.string(), created_at: z.string() });

/**
 * Records a domain event in the caller's transaction, with a webhook delivery (and its first
 * attempt's job) per subscribed endpoint: the event and its deliveries exist iff the change that
 * caused them commits.
 */
export async function recordEvent(tx: Db, event: DomainEvent): Promise<string> {
  const row = await tx.one(sql.type(eventIdRow)`
    insert into events (id, workspace_id, project_id, type, data)
    values (${newId('evt')}, ${event.workspaceId}, ${event.projectId}, ${event.type}, ${sql.jsonb(event.data as never)})
    returning id, created_at
  `);
  await enqueueWebhookDeliveries(tx, { ...event, id: row.id });
  return row.id;
}

/**
 * Retention: events (and with them, by cascade, their webhook deliveries and attempts) older than
 * `days`. Deliveries give up after about a day, so none of these is still pending.
 */
export async function deleteEventsBefore(db: Db, days: number): Promise<void> {
  await db.query(
    sql.typeAlias('void')`delete from events where created_at < now() - make_interval(days => ${days})`,
  );
}
