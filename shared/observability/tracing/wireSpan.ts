import type {
  Attributes,
  AttributeValue,
  HrTime,
  SpanContext,
  SpanKind,
  SpanStatusCode,
} from '@opentelemetry/api';
import { TraceState } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';

/** A span context as data: its trace state (an object with methods) in its W3C text form. */
type WireContext = Omit<SpanContext, 'traceState'> & { traceState?: string };
type WireLink = { context: WireContext; attributes?: Attributes; droppedAttributesCount?: number };

/**
 * Finished spans as one flat array of primitives, what a structured clone carries to the export
 * thread: a batch of nested span objects cost the serving thread ~3 µs a span to clone, the flat
 * array ~0.5 µs. Per span, the fixed slots below (links and events, rare, stay objects), then the
 * attribute count and each key and value. The resource is left out: the thread has the process's own.
 */
export type WireSpans = unknown[];

function toWireContext({ traceId, spanId, traceFlags, isRemote, traceState }: SpanContext): WireContext {
  return {
    traceId,
    spanId,
    traceFlags,
    ...(isRemote !== undefined && { isRemote }),
    ...(traceState !== undefined && { traceState: traceState.serialize() }),
  };
}

function fromWireContext({ traceState, ...ids }: WireContext): SpanContext {
  return traceState === undefined ? ids : { ...ids, traceState: new TraceState(traceState) };
}

export function packSpans(spans: readonly ReadableSpan[]): WireSpans {
  const out: unknown[] = [];
  for (const span of spans) {
    const { name, version, schemaUrl } = span.instrumentationScope;
    const own = span.spanContext();
    const parent = span.parentSpanContext;
    out.push(
      span.name,
      span.kind,
      own.traceId,
      own.spanId,
      own.traceFlags,
      own.isRemote,
      own.traceState?.serialize(),
      parent && toWireContext(parent),
      span.startTime[0],
      span.startTime[1],
      span.endTime[0],
      span.endTime[1],
      span.duration[0],
      span.duration[1],
      span.status.code,
      span.status.message,
      name,
      version,
      schemaUrl,
      span.droppedAttributesCount,
      span.droppedEventsCount,
      span.droppedLinksCount,
      span.links.length === 0
        ? undefined
        : span.links.map((link): WireLink => ({ ...link, context: toWireContext(link.context) })),
      span.events.length === 0 ? undefined : span.events,
    );
    const keys = Object.keys(span.attributes);
    out.push(keys.length);
    for (const key of keys) out.push(key, span.attributes[key]);
  }
  return out;
}

export function unpackSpans(wire: WireSpans, resource: Resource): ReadableSpan[] {
  const spans: ReadableSpan[] = [];
  let at = 0;
  const next = <T>() => wire[at++] as T;
  const time = (): HrTime => [next<number>(), next<number>()];
  while (at < wire.length) {
    const name = next<string>();
    const kind = next<SpanKind>();
    const [traceId, spanId, traceFlags] = [next<string>(), next<string>(), next<number>()];
    const [isRemote, traceState] = [next<boolean | undefined>(), next<string | undefined>()];
    const context = fromWireContext({
      traceId,
      spanId,
      traceFlags,
      ...(isRemote !== undefined && { isRemote }),
      ...(traceState !== undefined && { traceState }),
    });
    const parent = next<WireContext | undefined>();
    const [startTime, endTime, duration] = [time(), time(), time()];
    const code = next<SpanStatusCode>();
    const message = next<string | undefined>();
    const [scopeName, version, schemaUrl] = [next<string>(), next<string>(), next<string>()];
    const dropped = [next<number>(), next<number>(), next<number>()] as const;
    const links = next<WireLink[] | undefined>() ?? [];
    const events = next<TimedEvent[] | undefined>() ?? [];
    const attributes: Attributes = {};
    for (let count = next<number>(); count > 0; count--) attributes[next<string>()] = next<AttributeValue>();
    spans.push({
      name,
      kind,
      spanContext: () => context,
      parentSpanContext: parent && fromWireContext(parent),
      startTime,
      endTime,
      status: message === undefined ? { code } : { code, message },
      attributes,
      links: links.map((link) => ({ ...link, context: fromWireContext(link.context) })),
      events,
      duration,
      ended: true,
      resource,
      instrumentationScope: {
        name: scopeName,
        ...(version !== undefined && { version }),
        ...(schemaUrl !== undefined && { schemaUrl }),
      },
      droppedAttributesCount: dropped[0],
      droppedEventsCount: dropped[1],
      droppedLinksCount: dropped[2],
    });
  }
  return spans;
}
