import type { DatabasePool } from 'slonik';

import { notify } from '../db/queries/notifications.ts';
import { insertTestDelivery, lockWebhookEndpoint, testEventWaitSeconds } from '../db/queries/webhooks.ts';
import { newId } from '../primitives/ids.ts';
import type { WebhookProblem } from './endpoints.ts';
import { enqueueDeliveryAttempt } from './fanout.ts';

/** One test event per endpoint this often: enough to try a receiver, never a way to flood one. */
export const testEventIntervalSeconds = 10;

export type SentTestEvent = { eventId: string; deliveryId: string };

/** Why a test event was not sent; `rate_limited` says when to try again. */
export type TestEventProblem = WebhookProblem | { code: 'rate_limited'; message: string };

/**
 * "Send test event": a `webhook.test` event to this endpoint only, delivered, signed and retried
 * as any other (the same worker job, recorded in its deliveries), with `data` naming the endpoint
 * and where it was sent from (`console` or `operator`). The endpoint must be in `workspaceId` when one is given (the console's).
 * Problems: not_found, conflict (disabled), rate_limited (one was sent less than
 * testEventIntervalSeconds ago; the message says when to try again).
 */
export function sendTestEvent(
  pool: DatabasePool,
  input: { endpointId: string; workspaceId?: string; from: 'console' | 'operator' },
): Promise<{ sent: SentTestEvent } | { problem: TestEventProblem }> {
  return pool.transaction(async (tx): Promise<{ sent: SentTestEvent } | { problem: TestEventProblem }> => {
    const endpoint = await lockWebhookEndpoint(tx, input.endpointId);
    if (!endpoint || (input.workspaceId !== undefined && endpoint.workspace_id !== input.workspaceId)) {
      return { problem: { code: 'not_found', message: `no webhook endpoint ${input.endpointId}` } };
    }
    if (!endpoint.enabled) {
      return {
        problem: { code: 'conflict', message: 'the endpoint is disabled: enable it to send a test event' },
      };
    }
    const wait = await testEventWaitSeconds(tx, endpoint.id, testEventIntervalSeconds);
    if (wait > 0) {
      return {
        problem: {
          code: 'rate_limited',
          message: `a test event was sent to this endpoint moments ago: try again in ${wait} s`,
        },
      };
    }
    const sent = { eventId: newId('evt'), deliveryId: newId('whd') };
    await insertTestDelivery(tx, {
      ...sent,
      workspaceId: endpoint.workspace_id,
      projectId: endpoint.project_id,
      endpointId: endpoint.id,
      data: { webhookId: endpoint.id, sentFrom: input.from },
    });
    await enqueueDeliveryAttempt(
      tx,
      { deliveryId: sent.deliveryId, attempt: 1 },
      { endpointId: endpoint.id },
    );
    await notify(tx, 'webhooks:due', { id: endpoint.id });
    return { sent };
  });
}
