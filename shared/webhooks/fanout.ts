import type { DomainEvent, EventType } from '../db/queries/events.ts';
import { notify } from '../db/queries/notifications.ts';
import { findSubscribedEndpointIds, insertWebhookDeliveries } from '../db/queries/webhooks.ts';
import type { Db } from '../db/sql.ts';
import { newId } from '../primitives/ids.ts';
import { enqueue } from '../queue/enqueue.ts';
import type { WebhookDeliverPayload } from '../queue/taskMap.ts';

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

/**
 * The job that makes attempt `attempt`; its key makes a re-enqueue of the same attempt a no-op
 * replacement. Deliveries to one endpoint share a queue (`webhook:<endpointId>`), so they run one at
 * a time across every worker: a receiver that hangs until the deadline holds one delivery slot of
 * the fleet, and every other endpoint's deliveries keep the rest. The queue names are as many as the
 * endpoints with deliveries pending (endpoints are created by operators, not by API calls), and the
 * hourly maintenance removes those left empty (graphile-worker's GC_JOB_QUEUES).
 */
export async function enqueueDeliveryAttempt(
  tx: Db,
  payload: WebhookDeliverPayload,
  options: { endpointId: string; runAt?: string },
): Promise<void> {
  await enqueue(tx, 'webhook__deliver', payload, {
    jobKey: attemptJobKey(payload.deliveryId, payload.attempt),
    queueName: webhookQueueName(options.endpointId),
    // Transport failures are retried by our own schedule; these attempts only cover database errors.
    maxAttempts: 5,
    priority: 1,
    runAt: options.runAt,
  });
}

/** The job key of a delivery's attempt (bringForwardHeldDeliveries spells it in SQL too). */
export function attemptJobKey(deliveryId: string, attempt: number): string {
  return `webhook:${deliveryId}:${attempt}`;
}

/** The graphile-worker queue of an endpoint's deliveries. */
export function webhookQueueName(endpointId: string): string {
  return `webhook:${endpointId}`;
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
  for (const row of rows) {
    await enqueueDeliveryAttempt(tx, { deliveryId: row.id, attempt: 1 }, { endpointId: row.endpointId });
    // Identical notifications of one transaction are delivered once: one per endpoint, however many events.
    await notify(tx, 'webhooks:due', { id: row.endpointId });
  }
}
