import type { Logger, Task } from 'graphile-worker';

import { findDueDelivery } from '../../shared/db/queries/webhooks.ts';
import { webhookDeliverPayload } from '../../shared/queue/taskMap.ts';
import type { WorkerContext } from '../context.ts';
import { type AttemptRef, type AttemptResult, makeDeliveryAttempt } from '../webhooks/attempt.ts';
import { defaultWebhookPolicy, type WebhookPolicy } from '../webhooks/policy.ts';

/**
 * The job of one attempt of one webhook delivery (see makeDeliveryAttempt). Non-2xx answers,
 * timeouts and network errors schedule the next attempt by `policy`; a blocked (private) target
 * fails the delivery at once. Throwing is kept for database errors (graphile-worker retries those)
 * and for an attempt cut short by a stopping worker (handed back to the next one).
 *
 * A 2xx after failures brings the endpoint's deliveries held by backoff forward; this job then goes
 * on with the endpoint's due deliveries, oldest first, each when the one before has ended: the job
 * holds the endpoint's queue, so they stay one at a time, and they go at the receiver's pace. Left
 * to their own jobs they would go at one per graphile-worker poll: a job's end does not wake any
 * runner, and a side runner's fetch made while the endpoint's queue was locked found nothing, so
 * the next job of the queue waits for a poll (2 s per process; about 1 s with two processes).
 * Only then: in ordinary traffic each delivery keeps its own job, so its span stays in the trace
 * of the event that caused it (the catch-up's deliveries are traced under the job that made them).
 */
export function webhookDeliver(ctx: WorkerContext, policy: WebhookPolicy = defaultWebhookPolicy): Task {
  return async (rawPayload, helpers) => {
    const payload = webhookDeliverPayload.parse(rawPayload);
    const result = await makeDeliveryAttempt(ctx, policy, payload, helpers.abortSignal, true);
    if (result.kind === 'interrupted') throw new Error('worker stopping; attempt handed back');
    if (result.kind === 'skipped') {
      helpers.logger.debug(
        `webhook delivery ${payload.deliveryId} attempt ${payload.attempt} already made or gone`,
      );
      return;
    }
    logFailure(helpers.logger, payload, result);
    if (result.kind === 'made' && result.caughtUp > 0) {
      await catchUp(ctx, policy, result.endpointId, helpers.abortSignal, helpers.logger);
    }
  };
}

function logFailure(logger: Logger, ref: AttemptRef, result: AttemptResult) {
  if (result.kind === 'made' && !result.delivered) {
    logger.info(`webhook delivery ${ref.deliveryId} attempt ${ref.attempt} failed: ${result.error}`);
  }
}

/**
 * Makes the endpoint's due deliveries one after another until none is left, one fails (the
 * receiver is struggling again: the rest wait for their own jobs, still due), the worker stops,
 * or about one attempt deadline has passed, so that one job never holds its slot much longer than
 * a receiver hanging until the deadline would.
 */
async function catchUp(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  endpointId: string,
  signal: AbortSignal,
  logger: Logger,
) {
  const until = Date.now() + policy.timeoutMs;
  while (!signal.aborted && Date.now() < until) {
    const next = await findDueDelivery(ctx.pool, endpointId);
    if (!next) return;
    const ref = { deliveryId: next.id, attempt: next.attempt };
    const result = await makeDeliveryAttempt(ctx, policy, ref, signal, false);
    logFailure(logger, ref, result);
    if (result.kind !== 'made' || !result.delivered) return;
  }
}
