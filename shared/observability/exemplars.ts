import { trace, TraceFlags } from '@opentelemetry/api';

/**
 * The active span's ids as an OpenMetrics exemplar's labels, when that span is sampled (an exemplar
 * pointing at a trace nobody exported would lead nowhere); nothing with tracing off.
 */
export function traceExemplar(): { trace_id: string; span_id: string } | undefined {
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const { traceId, spanId, traceFlags } = span.spanContext();
  if ((traceFlags & TraceFlags.SAMPLED) === 0) return undefined;
  return { trace_id: traceId, span_id: spanId };
}
