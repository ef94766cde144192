import { z } from 'zod';

import { type Db, isoTimestamp, sql } from '../sql.ts';

/** Event kinds the service emits (spec "Webhooks"). */
export type EventType = 'task.message.created' | 'video.ready' | 'job.succeeded' | 'job.failed';

export type DomainEvent = {
  workspaceId: string;
  projectId: string | null;
  type: EventType;
  data: Record<string, unknown>;
};

const eventIdRow = z.object({ id: z.string(), created_at: isoTimestamp });

export function insertEvent(tx: Db, id: string, event: DomainEvent) {
  return tx.one(sql.type(eventIdRow)`
    insert into events (id, workspace_id, project_id, type, data)
    values (${id}, ${event.workspaceId}, ${event.projectId}, ${event.type}, ${sql.jsonb(event.data as never)})
    returning id, created_at
  `);
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
