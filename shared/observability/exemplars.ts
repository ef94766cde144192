import { trace } from '@opentelemetry/api';

import { isSampled } from './tracing/edgeDecision.ts';

/**
 * The active span's ids as an OpenMetrics exemplar's labels, when that span is sampled (an exemplar
 * pointing at a trace nobody exported would lead nowhere); nothing with tracing off.
 */
export function traceExemplar(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined || !isSampled(span)) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
