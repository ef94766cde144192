import { trace } from '@opentelemetry/api';
import type { JobHelpers, Logger, Task } from 'graphile-worker';

import { findDueDelivery } from '../../shared/db/queries/webhooks.ts';
import { webhookDeliverPayload } from '../../shared/queue/taskMap.ts';
import type { WorkerContext } from '../context.ts';
import { inJobSpan } from '../tracing/tracedTask.ts';
import { type AttemptRef, type AttemptResult, makeDeliveryAttempt } from '../webhooks/attempt.ts';
import { defaultWebhookPolicy, type WebhookPolicy } from '../webhooks/policy.ts';

/**
 * The job of one attempt of one webhook delivery (see makeDeliveryAttempt). Non-2xx answers,
 * timeouts and network errors schedule the next attempt by `policy`; a blocked (private) target
 * fails the delivery at once. Throwing is kept for database errors (graphile-worker retries those)
 * and for an attempt cut short by a stopping worker (handed back to the next one).
 *
 * After a 2xx the job goes on with the endpoint's due deliveries (drainEndpoint), so an endpoint
 * takes them at the pace it answers. Left to their own jobs they would go at one per graphile-worker
 * poll: the deliveries of an endpoint share a named queue, locked while one runs; when a job ends
 * its runner fetches again at once, but the completion that unlocks the queue is written a tick
 * later, so the fetch finds the queue still locked and the runner sleeps until its next poll (2 s
 * per process; about 1 s with two processes), and no job's end wakes any other runner.
 */
export function webhookDeliver(ctx: WorkerContext, policy: WebhookPolicy = defaultWebhookPolicy): Task {
  return async (rawPayload, helpers) => {
    const payload = webhookDeliverPayload.parse(rawPayload);
    const result = await makeDeliveryAttempt(ctx, policy, payload, helpers.abortSignal);
    if (result.kind === 'interrupted') throw new Error('worker stopping; attempt handed back');
    if (result.kind === 'skipped') {
      helpers.logger.debug(
        `webhook delivery ${payload.deliveryId} attempt ${payload.attempt} already made or gone`,
      );
      return;
    }
    logFailure(helpers.logger, payload, result);
    if (result.delivered) await drainEndpoint(ctx, policy, result.endpointId, helpers);
  };
}

function logFailure(logger: Logger, ref: AttemptRef, result: AttemptResult) {
  if (result.kind === 'made' && !result.delivered) {
    logger.info(`webhook delivery ${ref.deliveryId} attempt ${ref.attempt} failed: ${result.error}`);
  }
}

/**
 * Makes the endpoint's due deliveries, oldest first, each when the one before has ended, until none
 * is left, one fails (the receiver is struggling again: the rest wait for their own jobs, still
 * due), the worker stops, or `drainMs` has passed (then the queue's next job takes over). The job
 * holds the endpoint's queue throughout, so the endpoint still takes one slot of the fleet at a
 * time. Each attempt is traced as its own job's run, in the trace of the event that caused it,
 * linked to the job that made it.
 */
async function drainEndpoint(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  endpointId: string,
  helpers: JobHelpers,
) {
  const until = Date.now() + (policy.drainMs ?? defaultWebhookPolicy.drainMs);
  const own = trace.getActiveSpan()?.spanContext();
  const links = own ? [{ context: own }] : [];
  const drainedBy = String(helpers.job.id);
  while (!helpers.abortSignal.aborted && Date.now() < until) {
    const next = await findDueDelivery(ctx.pool, endpointId);
    if (!next) return;
    const ref = { deliveryId: next.id, attempt: next.attempts + 1 };
    const attributes = { 'svc.job.task': 'webhook__deliver', 'svc.webhook.drained_by_job': drainedBy };
    const result = await inJobSpan('webhook__deliver', next.trace, { attributes, links }, () =>
      makeDeliveryAttempt(ctx, policy, ref, helpers.abortSignal, next),
    );
    logFailure(helpers.logger, ref, result);
    if (result.kind !== 'made' || !result.delivered) return;
  }
}
