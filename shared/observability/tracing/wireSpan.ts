import type { Attributes, HrTime, SpanContext, SpanKind, SpanStatus } from '@opentelemetry/api';
import { type InstrumentationScope, TraceState } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';

/** A span context as data: its trace state (an object with methods) in its W3C text form. */
type WireContext = Omit<SpanContext, 'traceState'> & { traceState?: string };

/**
 * A finished span as plain data, what a structured clone carries to the export thread: the SDK's
 * ReadableSpan without its functions and its resource (the thread has the process's own).
 */
export type WireSpan = {
  name: string;
  kind: SpanKind;
  context: WireContext;
  parent: WireContext | undefined;
  startTime: HrTime;
  endTime: HrTime;
  status: SpanStatus;
  attributes: Attributes;
  links: { context: WireContext; attributes?: Attributes; droppedAttributesCount?: number }[];
  events: TimedEvent[];
  duration: HrTime;
  scope: InstrumentationScope;
  dropped: [attributes: number, events: number, links: number];
};

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

export function toWire(span: ReadableSpan): WireSpan {
  const { name, version, schemaUrl } = span.instrumentationScope;
  return {
    name: span.name,
    kind: span.kind,
    context: toWireContext(span.spanContext()),
    parent: span.parentSpanContext && toWireContext(span.parentSpanContext),
    startTime: span.startTime,
    endTime: span.endTime,
    status: span.status,
    attributes: span.attributes,
    links: span.links.map((link) => ({ ...link, context: toWireContext(link.context) })),
    events: span.events,
    duration: span.duration,
    scope: { name, ...(version !== undefined && { version }), ...(schemaUrl !== undefined && { schemaUrl }) },
    dropped: [span.droppedAttributesCount, span.droppedEventsCount, span.droppedLinksCount],
  };
}

export function fromWire(wire: WireSpan, resource: Resource): ReadableSpan {
  const context = fromWireContext(wire.context);
  return {
    name: wire.name,
    kind: wire.kind,
    spanContext: () => context,
    parentSpanContext: wire.parent && fromWireContext(wire.parent),
    startTime: wire.startTime,
    endTime: wire.endTime,
    status: wire.status,
    attributes: wire.attributes,
    links: wire.links.map((link) => ({ ...link, context: fromWireContext(link.context) })),
    events: wire.events,
    duration: wire.duration,
    ended: true,
    resource,
    instrumentationScope: wire.scope,
    droppedAttributesCount: wire.dropped[0],
    droppedEventsCount: wire.dropped[1],
    droppedLinksCount: wire.dropped[2],
  };
}
