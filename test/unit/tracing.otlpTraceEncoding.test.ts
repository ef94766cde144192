import { describe, expect, it } from '@jest/globals';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-node';

import { encodeTraceRequest } from '../../shared/observability/tracing/otlpTraceEncoding.ts';
import { redactSpan } from '../../shared/observability/tracing/redactSpan.ts';
import { exportServerSpansTo, ServerSpan } from '../../shared/observability/tracing/serverSpan.ts';
import { decodeTraceRequest } from '../helpers/otlpProtobuf.ts';

const ids = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
};
const resource = resourceFromAttributes({ 'service.name': 'svc-api', 'service.instance.id': 'web.1' });
const scope = { name: 'svc-api', version: '1.2.3' };
const configured = 'hirefire-token-0123456789abcdef';

function span(overrides: Partial<ReadableSpan>): ReadableSpan {
  return {
    name: 'getMe',
    kind: SpanKind.SERVER,
    spanContext: () => ids,
    parentSpanContext: undefined,
    startTime: [1_764_000_000, 123_456_789],
    endTime: [1_764_000_001, 999_999_999],
    status: { code: SpanStatusCode.UNSET },
    attributes: {
      'http.request.method': 'GET',
      'http.response.status_code': 200,
      'http.route': '/api/pub/v1/me',
    },
    links: [],
    events: [],
    duration: [1, 876_543_210],
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
    ...overrides,
  };
}

/** Everything a span can hold, texts with secrets in them among it. */
const full = span({
  name: `GET /hirefire/${configured}/info`,
  kind: SpanKind.CLIENT,
  spanContext: () => ({ ...ids, traceState: new TraceState('ours=1') }),
  parentSpanContext: { ...ids, spanId: '00f067aa0ba902b7', isRemote: true },
  status: { code: SpanStatusCode.ERROR, message: 'connect to postgres://app:hunter2@db/x failed' },
  attributes: {
    'url.full': 'https://hooks.example.com/in/secret-path?token=abc',
    'url.query': 'token=abc',
    'url.path': '/v1/x?sig=1',
    'gen_ai.response.finish_reasons': ['stop', 'length'],
    'gen_ai.usage.input_tokens': 1234567,
    'svc.negative': -42,
    'svc.big': 2 ** 40,
    'svc.ratio': 0.25,
    'svc.flag': false,
    'svc.mixed': [1, 2.5, true, null, undefined] as unknown as number[],
    'svc.unicode': 'café — ☕ 𝄞',
    'svc.long': 'x'.repeat(300),
    'svc.huge': `Bearer sk-${'y'.repeat(20_000)}`,
    'svc.undefined': undefined,
  },
  links: [
    {
      context: { ...ids, spanId: 'e'.repeat(16), isRemote: true, traceState: new TraceState('a=b') },
      attributes: { 'svc.link': `token=${configured}` },
      droppedAttributesCount: 2,
    },
    { context: { ...ids, spanId: 'f'.repeat(16) } },
  ],
  events: [
    { name: 'first chunk', time: [1_764_000_000, 500], attributes: { n: 1, why: `password=${configured}` } },
    { name: 'done', time: [1_764_000_001, 0], droppedAttributesCount: 3 },
  ],
  droppedAttributesCount: 1,
  droppedEventsCount: 2,
  droppedLinksCount: 3,
});

describe('encodeTraceRequest', () => {
  it("writes, byte for byte, what the OTLP exporter's serializer writes for the redacted spans", () => {
    const other = { name: 'svc-worker' };
    const spans = [
      full,
      span({}),
      span({ instrumentationScope: other }),
      span({ name: 'ünïcode', instrumentationScope: other, attributes: {} }),
    ];
    const expected = ProtobufTraceSerializer.serializeRequest(spans.map((s) => redactSpan(s, [configured])));
    expect(Buffer.from(encodeTraceRequest(spans, resource, [configured]))).toEqual(Buffer.from(expected!));
  });

  it('writes a ServerSpan, whose ids are words rather than hex, as the serializer writes its hex', () => {
    exportServerSpansTo({ onEnd: () => {} } as unknown as SpanProcessor, resource);
    const spans = Array.from({ length: 50 }, (_, i) => {
      const server = new ServerSpan(
        'GET',
        {},
        i % 2 === 0 ? [{ context: { ...ids, isRemote: true } }] : undefined,
      );
      server.finish(
        'getMe',
        { 'http.route': '/api/pub/v1/me', 'http.response.status_code': 200 },
        i % 3 === 0,
      );
      return server;
    });
    const expected = ProtobufTraceSerializer.serializeRequest(spans.map((s) => redactSpan(s, [])));
    expect(Buffer.from(encodeTraceRequest(spans, resource, []))).toEqual(Buffer.from(expected!));
  });

  it('leaves no secret in the bytes, and a receiver reads the spans back', () => {
    const bytes = Buffer.from(encodeTraceRequest([full, span({})], resource, [configured]));
    const text = bytes.toString('latin1');
    for (const secret of [configured, 'hunter2', 'token=abc', 'sig=1', 'y'.repeat(30)]) {
      expect(text).not.toContain(secret);
    }
    const request = decodeTraceRequest(bytes);
    const spans = request.resourceSpans!.flatMap((r) => r.scopeSpans!.flatMap((s) => s.spans!));
    expect(spans.map((s) => s.name)).toEqual(['GET /hirefire/[redacted]/info', 'getMe']);
    expect(spans[0]).toMatchObject({
      traceId: ids.traceId,
      spanId: ids.spanId,
      parentSpanId: '00f067aa0ba902b7',
    });
  });

  it('copies a pair whose text repeats, and writes the same bytes as encoding it again would', () => {
    const spans = [
      full,
      span({}),
      span({ attributes: { 'http.route': '/api/pub/v1/text', 'svc.request_id': 'req_2' } }),
    ];
    const expected = Buffer.from(
      ProtobufTraceSerializer.serializeRequest(spans.map((s) => redactSpan(s, [configured])))!,
    );
    for (let round = 0; round < 4; round++) {
      const bytes = Buffer.from(encodeTraceRequest(spans, resource, [configured]));
      expect(bytes).toEqual(expected);
      expect(bytes.toString('latin1')).not.toContain(configured);
    }
  });

  it('reuses no pair encoded under another list of secrets', () => {
    const leaky = span({ attributes: { 'svc.note': `/hirefire/${configured}/info` } });
    for (let round = 0; round < 3; round++) encodeTraceRequest([leaky], resource, []);
    const bytes = Buffer.from(encodeTraceRequest([leaky], resource, [configured]));
    expect(bytes.toString('latin1')).not.toContain(configured);
  });

  it('grows its buffer for a batch larger than the last, and encodes an empty batch', () => {
    const many = Array.from({ length: 2000 }, (_, i) =>
      span({ attributes: { 'svc.request_id': `req_${i}` } }),
    );
    const small = encodeTraceRequest([span({})], resource, []);
    const big = encodeTraceRequest(many, resource, []);
    expect(big.length).toBeGreaterThan(100 * small.length);
    expect(Buffer.from(big)).toEqual(Buffer.from(ProtobufTraceSerializer.serializeRequest(many)!));
    expect(encodeTraceRequest([], resource, []).length).toBe(0);
  });
});
