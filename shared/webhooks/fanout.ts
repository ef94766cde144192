import { z } from 'zod';

import { findSubscribedEndpointIds, insertWebhookDeliveries } from '../db/queries/webhooks.ts';
import type { Db } from '../db/sql.ts';
import type { DomainEvent, EventType } from '../events.ts';
import { newId } from '../ids.ts';
import { enqueue } from '../jobs.ts';

/** Event kinds an endpoint can subscribe to (spec "Webhooks"). */
export const webhookEventTypes = [
  'task.message.created',
  'video.ready',
  'job.succeeded',
  'job.failed',
] as const satisfies readonly EventType[];

export function isWebhookEventType(value: string): value is (typeof webhookEventTypes)[number] {
  return (webhookEventTypes as readonly string[]).includes(value);
}

/** Payload of `webhook__deliver`: one attempt of one delivery. */
export const webhookDeliverPayload = z.object({ deliveryId: z.string(), attempt: z.int().min(1) });
export type WebhookDeliverPayload = z.infer<typeof webhookDeliverPayload>;

/** The job that makes attempt `attempt`; its key makes a re-enqueue of the same attempt a no-op replacement. */
export async function enqueueDeliveryAttempt(
  tx: Db,
  payload: WebhookDeliverPayload,
  runAt?: string,
): Promise<void> {
  await enqueue(tx, 'webhook__deliver', payload, {
    jobKey: `webhook:${payload.deliveryId}:${payload.attempt}`,
    // Transport failures are retried by our own schedule; these attempts only cover database errors.
    maxAttempts: 5,
    priority: 1,
    runAt,
  });
}

/**
 * For an event just recorded (see recordEvent): one delivery row per subscribed endpoint and a job
 * for its first attempt, in the event's own transaction.
 */
export async function enqueueWebhookDeliveries(tx: Db, event: DomainEvent & { id: string }): Promise<void> {
  const endpointIds = await findSubscribedEndpointIds(tx, event);
  if (endpointIds.length === 0) return;
  const rows = endpointIds.map((endpointId) => ({
    id: newId('whd'),
    workspaceId: event.workspaceId,
    endpointId,
    eventId: event.id,
  }));
  await insertWebhookDeliveries(tx, rows);
  for (const row of rows) await enqueueDeliveryAttempt(tx, { deliveryId: row.id, attempt: 1 });
}
