import { context, propagation } from '@opentelemetry/api';
import { z } from 'zod';

/**
 * The W3C trace context (`traceparent`, `tracestate`) of the span that added a job, when tracing is
 * on: the worker continues that trace, so a call and the jobs it causes read as one trace. Any task's
 * payload may carry it (see enqueue); no schema but the worker's tracing reads it.
 */
export const traceCarrier = z.object({ traceparent: z.string(), tracestate: z.string().optional() });
export type TraceCarrier = z.infer<typeof traceCarrier>;

/**
 * The active span's trace context as a job stores it (`{ trace }` to spread into a payload), or
 * nothing: with tracing off no propagator is registered and nothing is injected, so payloads stay as
 * they were.
 */
export function activeTrace(): { trace?: TraceCarrier } {
  const carrier: Partial<TraceCarrier> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent === undefined ? {} : { trace: carrier as TraceCarrier };
}
