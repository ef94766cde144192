import type { Task } from 'graphile-worker';

import {
  findDeliveryAttemptContext,
  insertDeliveryAttempt,
  lockDelivery,
  updateDelivery,
} from '../../shared/db/queries/webhooks.ts';
import { webhookDeliverPayload } from '../../shared/queue/taskMap.ts';
import { enqueueDeliveryAttempt } from '../../shared/webhooks/fanout.ts';
import { webhookHeaders } from '../../shared/webhooks/signing.ts';
import type { WorkerContext } from '../context.ts';
import { observedSendWebhook } from '../webhooks/observedSend.ts';
import { defaultWebhookPolicy, retryDelayMs, type WebhookPolicy } from '../webhooks/policy.ts';
import type { SendOutcome } from '../webhooks/send.ts';

/**
 * One attempt of one webhook delivery. The HTTP call happens outside any transaction; its outcome,
 * the attempt's log row and the next attempt's job are then written together under the delivery's
 * row lock, so a re-run of an attempt that already committed changes nothing. Non-2xx answers,
 * timeouts and network errors schedule the next attempt by `policy`; a blocked (private) target
 * fails the delivery at once. Throwing is kept for database errors (graphile-worker retries those).
 */
export function webhookDeliver(ctx: WorkerContext, policy: WebhookPolicy = defaultWebhookPolicy): Task {
  return async (rawPayload, helpers) => {
    const payload = webhookDeliverPayload.parse(rawPayload);
    const delivery = await findDeliveryAttemptContext(ctx.pool, payload.deliveryId);
    if (!delivery || delivery.status !== 'pending' || delivery.attempts >= payload.attempt) {
      helpers.logger.debug(
        `webhook delivery ${payload.deliveryId} attempt ${payload.attempt} already made or gone`,
      );
      return;
    }
    let outcome: SendOutcome;
    if (!delivery.endpoint_enabled) {
      outcome = {
        delivered: false,
        statusCode: null,
        error: 'endpoint disabled',
        permanent: true,
        durationMs: 0,
      };
    } else {
      // The body is the event; its id is the message id receivers deduplicate on (same on every attempt).
      const body = JSON.stringify({
        id: delivery.event_id,
        type: delivery.event_type,
        createdAt: delivery.event_created_at,
        data: delivery.event_data,
      });
      const timestamp = Math.floor(Date.now() / 1000);
      outcome = await observedSendWebhook(
        {
          url: delivery.url,
          body,
          headers: webhookHeaders(delivery.secret, delivery.event_id, timestamp, body),
          timeoutMs: policy.timeoutMs,
          allowPrivate: ctx.config.webhookAllowPrivate,
          signal: helpers.abortSignal,
        },
        {
          metrics: ctx.providerMetrics,
          attributes: {
            'svc.webhook.delivery_id': payload.deliveryId,
            'svc.webhook.attempt': payload.attempt,
            'svc.webhook.event_type': delivery.event_type,
          },
        },
      );
    }
    // Shutting down mid-attempt: leave this attempt to the next worker instead of logging it as failed.
    if (helpers.abortSignal.aborted && !outcome.delivered) {
      throw new Error('worker stopping; attempt handed back');
    }
    await ctx.pool.transaction(async (tx) => {
      const current = await lockDelivery(tx, payload.deliveryId);
      if (!current || current.status !== 'pending' || current.attempts >= payload.attempt) return;
      await insertDeliveryAttempt(tx, {
        deliveryId: current.id,
        attempt: payload.attempt,
        statusCode: outcome.statusCode,
        error: outcome.error,
        durationMs: outcome.durationMs,
        responseExcerpt: outcome.responseExcerpt ?? null,
      });
      const delay = outcome.delivered || outcome.permanent ? null : retryDelayMs(policy, payload.attempt);
      const nextAttemptAt = delay === null ? null : new Date(Date.now() + delay).toISOString();
      await updateDelivery(tx, {
        id: current.id,
        status: outcome.delivered ? 'succeeded' : nextAttemptAt === null ? 'failed' : 'pending',
        attempts: payload.attempt,
        lastStatusCode: outcome.statusCode,
        lastError: outcome.error,
        nextAttemptAt,
      });
      if (nextAttemptAt !== null) {
        await enqueueDeliveryAttempt(
          tx,
          { deliveryId: current.id, attempt: payload.attempt + 1 },
          { endpointId: current.endpoint_id, runAt: nextAttemptAt },
        );
      }
    });
    if (!outcome.delivered) {
      helpers.logger.info(
        `webhook delivery ${payload.deliveryId} attempt ${payload.attempt} failed: ${outcome.error}`,
      );
    }
  };
}
