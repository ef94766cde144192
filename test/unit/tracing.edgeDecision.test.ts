import { describe, expect, it, jest } from '@jest/globals';
import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

import {
  isSampled,
  isSampledAtEdge,
  sampledRoot,
  UnsampledSpan,
} from '../../shared/observability/tracing/edgeDecision.ts';

describe('an unsampled call’s span', () => {
  it('makes its ids once, when first read, and keeps them', () => {
    const span = new UnsampledSpan();
    const made = () => (span as unknown as { ids: unknown }).ids !== undefined;
    // What every answered call's metrics ask (an exemplar?) makes no ids.
    expect(isSampled(span)).toBe(false);
    expect(made()).toBe(false);
    const first = span.spanContext();
    expect(first).toEqual({
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      spanId: expect.stringMatching(/^[0-9a-f]{16}$/),
      traceFlags: TraceFlags.NONE,
    });
    expect(span.spanContext()).toBe(first);
    expect(new UnsampledSpan().spanContext().traceId).not.toBe(first.traceId);
    expect(span.isRecording()).toBe(false);
  });

  it('never makes an all-zero id, which W3C trace context calls invalid', () => {
    const random = jest.spyOn(Math, 'random').mockReturnValue(0);
    try {
      const { traceId, spanId } = new UnsampledSpan().spanContext();
      expect(traceId).toBe(`${'0'.repeat(31)}1`);
      expect(spanId).toBe(`${'0'.repeat(15)}1`);
    } finally {
      random.mockRestore();
    }
  });

  it('carries the decision on as a job stores it: a valid traceparent, not sampled', () => {
    const span = new UnsampledSpan();
    const carrier: Record<string, string> = {};
    new W3CTraceContextPropagator().inject(trace.setSpan(ROOT_CONTEXT, span), carrier, {
      set: (c, k, v) => (c[k] = v),
    });
    const { traceId, spanId } = span.spanContext();
    expect(carrier.traceparent).toBe(`00-${traceId}-${spanId}-00`);
  });
});

describe('the edge’s decision to sample', () => {
  it('holds for a root started in sampledRoot, never for a span with a parent there', () => {
    expect(isSampledAtEdge(sampledRoot)).toBe(true);
    expect(isSampledAtEdge(ROOT_CONTEXT)).toBe(false);
    expect(isSampledAtEdge(trace.setSpan(sampledRoot, new UnsampledSpan()))).toBe(false);
  });
});
