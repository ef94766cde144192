import { describe, expect, it } from '@jest/globals';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';

import { packSpans, unpackSpans } from '../../shared/observability/tracing/wireSpan.ts';

const ids = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
};

const span: ReadableSpan = {
  name: 'createText',
  kind: SpanKind.SERVER,
  spanContext: () => ({ ...ids, traceState: new TraceState('ours=1') }),
  parentSpanContext: {
    ...ids,
    spanId: '00f067aa0ba902b7',
    isRemote: true,
    traceState: new TraceState('proxy=a,edge=b'),
  },
  startTime: [1_700_000_000, 1],
  endTime: [1_700_000_000, 2_000_001],
  status: { code: SpanStatusCode.ERROR, message: 'upstream failed' },
  attributes: {
    'http.route': '/api/pub/v1/text',
    'http.response.status_code': 502,
    'gen_ai.response.finish_reasons': ['stop'],
  },
  links: [
    { context: { ...ids, spanId: 'e'.repeat(16), isRemote: true }, attributes: { 'svc.link': 'caller' } },
  ],
  events: [{ name: 'first chunk', time: [1_700_000_000, 500], attributes: { n: 1 } }],
  duration: [0, 2_000_000],
  ended: true,
  resource: resourceFromAttributes({ 'service.name': 'svc-api' }),
  instrumentationScope: { name: 'svc-api', version: '1.2.3' },
  droppedAttributesCount: 1,
  droppedEventsCount: 2,
  droppedLinksCount: 3,
};

/** A root span with nothing optional: no parent, trace state, links, events, status message or scope version. */
const bare: ReadableSpan = {
  ...span,
  name: 'platform.me',
  spanContext: () => ids,
  parentSpanContext: undefined,
  status: { code: SpanStatusCode.UNSET },
  attributes: {},
  links: [],
  events: [],
  instrumentationScope: { name: 'svc-api' },
  droppedAttributesCount: 0,
  droppedEventsCount: 0,
  droppedLinksCount: 0,
};

describe('spans on their way to the export thread', () => {
  const resource = resourceFromAttributes({ 'service.name': 'svc-api' });

  it('survive a structured clone whole, trace states included', () => {
    const [back, backBare, ...more] = unpackSpans(structuredClone(packSpans([span, bare])), resource);
    expect(more).toEqual([]);
    const { spanContext, parentSpanContext, links, resource: _resource, ...rest } = back!;
    const { spanContext: _a, parentSpanContext: _b, links: _c, resource: _d, ...expected } = span;
    expect(rest).toEqual(expected);
    expect(back!.resource).toBe(resource);
    expect(spanContext().traceState?.serialize()).toBe('ours=1');
    expect({ ...spanContext(), traceState: undefined }).toEqual({ ...ids, traceState: undefined });
    expect(parentSpanContext?.traceState?.get('edge')).toBe('b');
    expect(parentSpanContext).toMatchObject({ spanId: '00f067aa0ba902b7', isRemote: true });
    expect(links).toEqual([
      { context: { ...ids, spanId: 'e'.repeat(16), isRemote: true }, attributes: { 'svc.link': 'caller' } },
    ]);
    const { spanContext: bareContext, resource: _e, ...bareRest } = backBare!;
    const { spanContext: _f, resource: _g, ...bareExpected } = bare;
    expect(bareRest).toEqual(bareExpected);
    expect(bareContext()).toEqual(ids);
  });

  it('travel as primitives: a root span adds no object to the batch (a parent, links and events do)', () => {
    const wire = packSpans([bare, bare]);
    expect(wire.filter((slot) => typeof slot === 'object' && slot !== null)).toEqual([]);
  });
});
