import { trace } from '@opentelemetry/api';
import type { JobHelpers, Logger, Task } from 'graphile-worker';

import { type DueDelivery, findDueDeliveries } from '../../shared/db/queries/webhooks.ts';
import { webhookDeliverPayload } from '../../shared/queue/taskMap.ts';
import type { WorkerContext } from '../context.ts';
import { inJobSpan } from '../tracing/tracedTask.ts';
import {
  type AttemptRef,
  type AttemptResult,
  makeDeliveryAttempt,
  recordAttempt,
  sendAttempt,
} from '../webhooks/attempt.ts';
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
 * Makes the endpoint's due deliveries, oldest first, each sent when the one before has been
 * answered, until none is left, one fails (the receiver is struggling again: the rest wait for their
 * own jobs, still due), the worker stops, or `drainMs` has passed (then the queue's next job takes
 * over). The job holds the endpoint's queue throughout, so the endpoint takes one slot of the fleet,
 * and its receiver one request at a time. A delivery's record is written while the next one is sent
 * (one write in flight at most): the receiver sets the pace, not the database's round trips. Each
 * attempt is traced as its own job's run, in the trace of the event that caused it, linked to the
 * job that made it.
 *
 * An endpoint that had more than this job's own delivery is busy: when none is left, the job waits
 * up to `lingerMs` for the next one to be queued (webhooks:due) before ending, since a delivery
 * queued just as the job ends would wait for a poll (see webhookDeliver). An endpoint with one
 * delivery at a time never lingers, so sporadic traffic to many endpoints keeps every slot free.
 */
async function drainEndpoint(
  ctx: WorkerContext,
  policy: WebhookPolicy,
  endpointId: string,
  helpers: JobHelpers,
) {
  const until = Date.now() + (policy.drainMs ?? defaultWebhookPolicy.drainMs);
  const lingerMs = policy.lingerMs ?? defaultWebhookPolicy.lingerMs;
  const own = trace.getActiveSpan()?.spanContext();
  const span = {
    attributes: { 'svc.job.task': 'webhook__deliver', 'svc.webhook.drained_by_job': String(helpers.job.id) },
    links: own ? [{ context: own }] : [],
  };
  const arrivals = arrivalsOf(ctx, endpointId);
  const due: DueDelivery[] = [];
  let recording: Promise<unknown> = Promise.resolve();
  let writing: string | undefined;
  let made = 0;
  try {
    while (!helpers.abortSignal.aborted && Date.now() < until) {
      if (due.length === 0) {
        arrivals.reset();
        due.push(...(await findDueDeliveries(ctx.pool, endpointId, batch, writing ? [writing] : [])));
        if (due.length === 0 && made > 0 && (await arrivals.next(lingerMs, helpers.abortSignal))) continue;
      }
      const next = due.shift();
      if (!next) return;
      made += 1;
      const ref = { deliveryId: next.id, attempt: next.attempts + 1 };
      const answered = Promise.withResolvers<boolean>();
      const attempt = inJobSpan('webhook__deliver', next.trace, span, async () => {
        const sent = await sendAttempt(ctx, policy, ref, helpers.abortSignal, next);
        // Go on after a 2xx, or past an attempt already made; stop at a failure or when stopping.
        answered.resolve(sent.kind === 'sent' ? sent.outcome.delivered : sent.kind === 'skipped');
        if (sent.kind !== 'sent') return;
        await recording;
        logFailure(helpers.logger, ref, await recordAttempt(ctx, policy, ref, sent, true));
      });
      attempt.catch(answered.reject);
      const goOn = await answered.promise;
      await recording;
      [recording, writing] = [attempt, next.id];
      if (!goOn) return;
    }
  } finally {
    arrivals.close();
    await recording;
  }
}

// Due deliveries read at once: one query for this many attempts.
const batch = 20;

/** Whether a delivery to the endpoint was queued since the last reset, and a wait for the next. */
function arrivalsOf(ctx: WorkerContext, endpointId: string) {
  let arrived = false;
  let wake: (() => void) | undefined;
  const off = ctx.webhookArrivals.on(endpointId, () => {
    arrived = true;
    wake?.();
  });
  return {
    reset: () => void (arrived = false),
    /** True once one arrives (at once if one did since the reset), false after `ms` or on abort. */
    next: (ms: number, signal: AbortSignal) =>
      new Promise<boolean>((resolve) => {
        if (arrived) return resolve(true);
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          wake = undefined;
          resolve(arrived);
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done);
        wake = done;
      }),
    close: off,
  };
}
