import { describe, expect, it } from '@jest/globals';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags } from '@opentelemetry/api';
import { hrTimeToMilliseconds } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  BasicTracerProvider,
  ParentBasedSampler,
  type ReadableSpan,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';

import { encodeTraceRequest } from '../../shared/observability/tracing/otlpTraceEncoding.ts';
import { exportServerSpansTo, ServerSpan } from '../../shared/observability/tracing/serverSpan.ts';
import { decodeTraceRequest } from '../helpers/otlpProtobuf.ts';

const resource = resourceFromAttributes({ 'service.name': 'svc-api' });

/** A processor that keeps what ends, as the batch processor would queue it. */
function collecting(): SpanProcessor & { ended: ReadableSpan[] } {
  const ended: ReadableSpan[] = [];
  return {
    ended,
    onStart: () => {},
    onEnd: (span) => void ended.push(span),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
}

describe('ServerSpan', () => {
  it('ends into the provider’s processor as a sampled SERVER root with the times and fields the SDK’s has', () => {
    const processor = collecting();
    exportServerSpansTo(processor, resource);
    const before = Date.now();
    const link = {
      context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1, isRemote: true },
    };
    const span = new ServerSpan('GET', { 'http.request.method': 'GET' }, [link]);
    span.updateName('getMe');
    span.setAttributes({
      'http.response.status_code': 200,
      'http.route': '/api/pub/v1/me',
      'svc.none': undefined,
    });
    span.end();
    const after = Date.now();
    expect(processor.ended).toEqual([span]);
    const { traceId, spanId, traceFlags } = span.spanContext();
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(spanId).toMatch(/^[0-9a-f]{16}$/);
    expect(traceFlags).toBe(TraceFlags.SAMPLED);
    expect(span).toMatchObject({
      name: 'getMe',
      kind: SpanKind.SERVER,
      parentSpanContext: undefined,
      attributes: {
        'http.request.method': 'GET',
        'http.response.status_code': 200,
        'http.route': '/api/pub/v1/me',
      },
      links: [link],
      resource,
      instrumentationScope: { name: 'svc-api' },
      status: { code: SpanStatusCode.UNSET },
      ended: true,
    });
    expect(Object.keys(span.attributes)).not.toContain('svc.none');
    const start = hrTimeToMilliseconds(span.startTime);
    const end = hrTimeToMilliseconds(span.endTime);
    expect(start).toBeGreaterThanOrEqual(before);
    expect(end).toBeLessThanOrEqual(after + 1);
    expect(end).toBeGreaterThanOrEqual(start);
    expect(hrTimeToMilliseconds(span.duration)).toBeCloseTo(end - start, 3);
  });

  it('parents the SDK’s spans started in its context, which the parent-based sampler then samples', () => {
    const processor = collecting();
    exportServerSpansTo(processor, resource);
    const provider = new BasicTracerProvider({
      resource,
      sampler: new ParentBasedSampler({ root: new AlwaysOffSampler() }),
      spanProcessors: [processor],
    });
    const server = new ServerSpan('POST', {});
    const child = provider
      .getTracer('svc-api')
      .startSpan('provider.chat', {}, trace.setSpan(ROOT_CONTEXT, server));
    child.end();
    server.end();
    const [exportedChild, exportedServer] = processor.ended;
    expect(exportedServer).toBe(server);
    expect(exportedChild!.spanContext().traceId).toBe(server.spanContext().traceId);
    expect(exportedChild!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
    expect(exportedChild!.spanContext().traceFlags & TraceFlags.SAMPLED).toBe(TraceFlags.SAMPLED);
    // The child's tracer and ServerSpan name the same scope: one ScopeSpans on the wire.
    const request = decodeTraceRequest(Buffer.from(encodeTraceRequest(processor.ended, resource, [])));
    expect(request.resourceSpans![0]!.scopeSpans).toHaveLength(1);
    expect(request.resourceSpans![0]!.scopeSpans![0]!.spans!.map((s) => s.name)).toEqual([
      'provider.chat',
      'POST',
    ]);
  });

  it('keeps the SDK’s rules: OK is final, UNSET changes nothing, an exception is an event, nothing changes once ended', () => {
    const processor = collecting();
    exportServerSpansTo(processor, resource);
    const span = new ServerSpan('GET', {});
    span.setStatus({ code: SpanStatusCode.UNSET, message: 'ignored' });
    expect(span.status).toEqual({ code: SpanStatusCode.UNSET });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream failed' });
    expect(span.status).toEqual({ code: SpanStatusCode.ERROR, message: 'upstream failed' });
    span.setStatus({ code: SpanStatusCode.OK, message: 'dropped: only an error keeps one' });
    span.setStatus({ code: SpanStatusCode.ERROR });
    expect(span.status).toEqual({ code: SpanStatusCode.OK });
    const error = Object.assign(new Error('boom'), { code: 'ECONNRESET' });
    span.recordException(error);
    span.addEvent('first chunk', { n: 1 });
    expect(span.events.map((e) => [e.name, e.attributes])).toEqual([
      [
        'exception',
        { 'exception.type': 'ECONNRESET', 'exception.message': 'boom', 'exception.stacktrace': error.stack },
      ],
      ['first chunk', { n: 1 }],
    ]);
    expect(span.isRecording()).toBe(true);
    span.end();
    span.end();
    span.setAttribute('late', 1);
    span.updateName('late');
    span.addEvent('late');
    expect(processor.ended).toEqual([span]);
    expect(span.isRecording()).toBe(false);
    expect(span.name).toBe('GET');
    expect(span.attributes).toEqual({});
    expect(span.events).toHaveLength(2);
  });

  it('gives a span its own events and links when it gets one, never another span’s', () => {
    exportServerSpansTo(collecting(), resource);
    const [first, second] = [new ServerSpan('GET', {}), new ServerSpan('GET', {})];
    first.addEvent('only mine');
    first.addLink({ context: { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 } });
    expect([first.events.length, first.links.length]).toEqual([1, 1]);
    expect([second.events.length, second.links.length]).toEqual([0, 0]);
    expect(second.spanContext().traceId).not.toBe(first.spanContext().traceId);
    expect(second.spanContext()).toBe(second.spanContext());
  });

  it('ends in one step with finish: named, every attribute added, an error status for a failure', () => {
    const processor = collecting();
    exportServerSpansTo(processor, resource);
    const span = new ServerSpan('GET', {});
    span.setAttribute('svc.early', 'kept');
    span.finish('getMe', { 'http.response.status_code': 503 }, true);
    span.finish('late', { late: 1 }, false);
    expect(processor.ended).toEqual([span]);
    expect(span).toMatchObject({
      name: 'getMe',
      attributes: { 'svc.early': 'kept', 'http.response.status_code': 503 },
      status: { code: SpanStatusCode.ERROR },
    });
  });
});
