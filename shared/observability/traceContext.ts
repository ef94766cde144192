import { context, propagation } from '@opentelemetry/api';

import type { TraceCarrier } from '../queue/taskMap.ts';

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
