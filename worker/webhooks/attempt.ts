import {
  bringForwardHeldDeliveries,
  type DeliveryAttemptContext,
  findDeliveryAttemptContext,
  insertDeliveryAttempt,
  lockDeliveryToRecord,
  removeAttemptJob,
  updateDelivery,
} from '../../shared/db/queries/webhooks.ts';
import { attemptJobKey, enqueueDeliveryAttempt } from '../../shared/webhooks/fanout.ts';
import { webhookHeaders } from '../../shared/webhooks/signing.ts';
import type { WorkerContext } from '../context.ts';
import { observedSendWebhook } from './observedSend.ts';
import { retryDelayMs, type WebhookPolicy } from './policy.ts';
import type { SendOutcome } from './send.ts';

export type AttemptRef = { deliveryId: string; attempt: number };

/**
 * What became of an attempt: `skipped` (already made, or the delivery is gone or finished),
 * `interrupted` (the worker is stopping; nothing recorded, the attempt's job stays queued), or made.
 * A 2xx that found deliveries held by backoff brought them forward (`caughtUp`).
 */
export type AttemptResult =
  | { kind: 'skipped' }
  | { kind: 'interrupted' }
  | { kind: 'made'; endpointId: string; delivered: boolean; error: string | null; caughtUp: number };

const disabled: SendOutcome = {
  delivered: false,
  statusCode: null,
  error: 'endpoint disabled',
  permanent: true,
  durationMs: 0,
};

function send(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  d: DeliveryAttemptContext,
  ref: AttemptRef,
  signal: AbortSignal,
) {
  if (!d.endpoint_enabled) return Promise.resolve(disabled);
  // The body is the event; its id is the message id receivers deduplicate on (same on every attempt).
  const body = JSON.stringify({
    id: d.event_id,
    type: d.event_type,
    createdAt: d.event_created_at,
    data: d.event_data,
  });
  const timestamp = Math.floor(Date.now() / 1000);
  return observedSendWebhook(
    {
      url: d.url,
      body,
      // During a rotation's overlap, signed with the replaced secret too: receivers accept either.
      headers: webhookHeaders(
        d.previous_secret === null ? [d.secret] : [d.secret, d.previous_secret],
        d.event_id,
        timestamp,
        body,
      ),
      timeoutMs: policy.timeoutMs,
      allowPrivate: ctx.config.webhookAllowPrivate,
      signal,
    },
    {
      metrics: ctx.providerMetrics,
      attributes: {
        'svc.webhook.delivery_id': ref.deliveryId,
        'svc.webhook.attempt': ref.attempt,
        'svc.webhook.event_type': d.event_type,
      },
    },
  );
}

/**
 * One attempt of one delivery: sendAttempt, then recordAttempt. `drained` is the delivery as read
 * when another delivery's job makes the attempt (draining its endpoint).
 */
export async function makeDeliveryAttempt(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  ref: AttemptRef,
  signal: AbortSignal,
  drained?: DeliveryAttemptContext,
): Promise<AttemptResult> {
  const sent = await sendAttempt(ctx, policy, ref, signal, drained);
  if (sent.kind !== 'sent') return sent;
  return recordAttempt(ctx, policy, ref, sent, drained !== undefined);
}

export type SentAttempt = { kind: 'sent'; outcome: SendOutcome; delivery: DeliveryAttemptContext };

/**
 * The HTTP call of an attempt, outside any transaction: `skipped` when the attempt was already made
 * or the delivery is gone or finished, `interrupted` when the worker is stopping (nothing to record;
 * the attempt's job stays queued).
 */
export async function sendAttempt(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  ref: AttemptRef,
  signal: AbortSignal,
  drained?: DeliveryAttemptContext,
): Promise<SentAttempt | { kind: 'skipped' } | { kind: 'interrupted' }> {
  const delivery = drained ?? (await findDeliveryAttemptContext(ctx.pool, ref.deliveryId));
  if (!delivery || delivery.status !== 'pending' || delivery.attempts >= ref.attempt) {
    return { kind: 'skipped' };
  }
  const outcome = await send(ctx, policy, delivery, ref, signal);
  // Shutting down mid-attempt: leave this attempt to the next worker instead of logging it as failed.
  if (signal.aborted && !outcome.delivered) return { kind: 'interrupted' };
  return { kind: 'sent', outcome, delivery };
}

/**
 * Writes a sent attempt: its outcome, its log row (with the reason it ran early, if it was brought
 * forward or resent) and the next attempt's job, together under the delivery's row lock, so a re-run
 * of an attempt that already committed changes nothing. A 2xx brings the endpoint's held deliveries
 * forward in the same transaction. `drained`: another delivery's job made the attempt, and the
 * attempt's own queued job is dropped with the record.
 */
export function recordAttempt(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  ref: AttemptRef,
  { outcome, delivery }: SentAttempt,
  drained: boolean,
): Promise<AttemptResult> {
  return ctx.pool.transaction(async (tx): Promise<AttemptResult> => {
    const current = await lockDeliveryToRecord(tx, ref.deliveryId);
    if (!current || current.status !== 'pending' || current.attempts >= ref.attempt) {
      return { kind: 'skipped' };
    }
    await insertDeliveryAttempt(tx, {
      deliveryId: current.id,
      attempt: ref.attempt,
      statusCode: outcome.statusCode,
      error: outcome.error,
      durationMs: outcome.durationMs,
      responseExcerpt: outcome.responseExcerpt ?? null,
      reason: current.next_attempt_reason,
    });
    const delay = outcome.delivered || outcome.permanent ? null : retryDelayMs(policy, ref.attempt);
    const nextAttemptAt = delay === null ? null : new Date(Date.now() + delay).toISOString();
    await updateDelivery(tx, {
      id: current.id,
      status: outcome.delivered ? 'succeeded' : nextAttemptAt === null ? 'failed' : 'pending',
      attempts: ref.attempt,
      lastStatusCode: outcome.statusCode,
      lastError: outcome.error,
      nextAttemptAt,
    });
    if (drained) await removeAttemptJob(tx, attemptJobKey(current.id, ref.attempt));
    if (nextAttemptAt !== null) {
      await enqueueDeliveryAttempt(
        tx,
        { deliveryId: current.id, attempt: ref.attempt + 1 },
        { endpointId: current.endpoint_id, runAt: nextAttemptAt },
      );
    }
    const caughtUp =
      outcome.delivered && delivery.endpoint_has_held
        ? await bringForwardHeldDeliveries(tx, {
            endpointId: current.endpoint_id,
            deliveryId: current.id,
            statusCode: outcome.statusCode ?? 0,
          })
        : [];
    return {
      kind: 'made',
      endpointId: current.endpoint_id,
      delivered: outcome.delivered,
      error: outcome.error,
      caughtUp: caughtUp.length,
    };
  });
}
