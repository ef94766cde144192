import { describe, expect, it } from '@jest/globals';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';

import { redactSpan } from '../../shared/observability/tracing/redactSpan.ts';
import { secretSamples } from '../helpers/secretSamples.ts';

const context = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
};

function span(overrides: Partial<ReadableSpan>): ReadableSpan {
  return {
    name: 'GET',
    kind: SpanKind.CLIENT,
    spanContext: () => context,
    startTime: [0, 0],
    endTime: [0, 1],
    status: { code: SpanStatusCode.UNSET },
    attributes: {},
    links: [],
    events: [],
    duration: [0, 1],
    ended: true,
    resource: undefined as unknown as ReadableSpan['resource'],
    instrumentationScope: { name: 'test' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
    ...overrides,
  };
}

describe('redactSpan', () => {
  const configured = 'hirefire-token-0123456789abcdef';

  it('masks every credential format and configured value wherever a span holds text', () => {
    for (const sample of secretSamples()) {
      const text = `failed with ${sample.text}`;
      const out = redactSpan(
        span({
          name: `GET ${sample.text}`,
          attributes: { 'svc.note': text, 'svc.list': [text, 'plain'], 'svc.count': 3 },
          status: { code: SpanStatusCode.ERROR, message: text },
          events: [{ name: 'exception', time: [0, 0], attributes: { 'exception.message': text } }],
          links: [{ context, attributes: { 'svc.why': text } }],
        }),
        [configured],
      );
      expect(JSON.stringify(out)).not.toContain(sample.secret);
      expect(out.attributes['svc.count']).toBe(3);
      expect((out.attributes['svc.list'] as string[])[1]).toBe('plain');
    }
    const named = redactSpan(span({ name: `GET /hirefire/${configured}/info` }), [configured]);
    expect(named.name).toBe('GET /hirefire/[redacted]/info');
  });

  it('exports URLs without user information, queries or fragments, and drops url.query', () => {
    const out = redactSpan(
      span({
        attributes: {
          'url.full': 'https://user:pw@hooks.example.com/in/abc?token=q1#frag',
          'url.path': '/in/abc?token=q2',
          'url.query': 'token=q3',
          'http.target': '/x?sig=q4',
        },
      }),
      [],
    );
    expect(out.attributes).toEqual({
      'url.full': 'https://hooks.example.com/in/abc',
      'url.path': '/in/abc',
      'http.target': '/x',
    });
  });

  it('keeps the span’s identity and timing', () => {
    const original = span({ name: 'platform.me', kind: SpanKind.SERVER });
    const out = redactSpan(original, []);
    expect(out.spanContext()).toBe(context);
    expect(out).toMatchObject({ name: 'platform.me', kind: SpanKind.SERVER, duration: [0, 1], ended: true });
  });
});
