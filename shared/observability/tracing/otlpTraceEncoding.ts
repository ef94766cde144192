import {
  type Attributes,
  type AttributeValue,
  type HrTime,
  type Link,
  type SpanContext,
  TraceFlags,
} from '@opentelemetry/api';
import type { InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-node';

import { ProtobufWriter } from './protobufWriter.ts';
import { redactValue, scrub } from './redactSpan.ts';
import { ServerSpan } from './serverSpan.ts';

/** Wire types of Protocol Buffers. */
const varint = 0;
const bits64 = 1;
const delimited = 2;
const bits32 = 5;

/** Span.flags: the W3C trace flags, and whether the parent (or a link's span) is remote. */
const hasIsRemote = 0x100;
const isRemoteFlag = 0x200;
const spanFlags = (traceFlags: number, isRemote: boolean | undefined) =>
  (traceFlags & 0xff) | hasIsRemote | (isRemote === true ? isRemoteFlag : 0);

/**
 * What is remembered of an attribute key: its KeyValue.key field encoded, and the last text value
 * it had in a span with the whole KeyValue encoded once that value came twice in a row. A span's
 * keys are few and its texts repeat (the route, the operation, the method), so most pairs are copied
 * rather than redacted and encoded again; a value that changes every time (a request id) costs one
 * comparison more and keeps nothing. Bounded, as an instrumentation naming keys after data would
 * otherwise grow it without end.
 */
type KeyEntry = { key: Uint8Array; lastText: string | undefined; lastPair: Uint8Array | undefined };
const keyEntries = new Map<string, KeyEntry>();
const maxKeyEntries = 1024;

/** The secrets the remembered pairs were redacted with: a pair is reused only under the same list. */
let pairsRedactedWith: readonly string[] | undefined;

function rememberPairsFor(known: readonly string[]): void {
  if (known === pairsRedactedWith) return;
  for (const entry of keyEntries.values()) {
    entry.lastText = undefined;
    entry.lastPair = undefined;
  }
  pairsRedactedWith = known;
}

function keyEntry(key: string): KeyEntry | undefined {
  const known = keyEntries.get(key);
  if (known !== undefined || keyEntries.size >= maxKeyEntries) return known;
  const writer = new ProtobufWriter(key.length + 8);
  writer.tag(1, delimited);
  writer.string(key);
  const entry = { key: writer.finish().slice(), lastText: undefined, lastPair: undefined };
  keyEntries.set(key, entry);
  return entry;
}

/** Span.attributes: the field whose pairs keyEntry remembers. */
const spanAttributes = 9;

function writeAnyValue(w: ProtobufWriter, value: unknown): void {
  if (typeof value === 'string') {
    w.tag(1, delimited);
    w.string(value);
  } else if (typeof value === 'boolean') {
    w.tag(2, varint);
    w.uint32(value ? 1 : 0);
  } else if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= -(2 ** 63) && value < 2 ** 63) {
      w.tag(3, varint);
      w.int64(value);
    } else {
      w.tag(4, bits64);
      w.double(value);
    }
  } else if (Array.isArray(value)) {
    w.tag(5, delimited);
    const array = w.begin();
    for (const item of value) {
      w.tag(1, delimited);
      const at = w.begin();
      writeAnyValue(w, item);
      w.end(at);
    }
    w.end(array);
  }
}

function writePair(
  w: ProtobufWriter,
  field: number,
  key: string,
  entry: KeyEntry | undefined,
  value: AttributeValue,
): void {
  w.tag(field, delimited);
  const pair = w.begin();
  if (entry === undefined) {
    w.tag(1, delimited);
    w.string(key);
  } else {
    w.raw(entry.key);
  }
  w.tag(2, delimited);
  const at = w.begin();
  writeAnyValue(w, value);
  w.end(at);
  w.end(pair);
}

/** `attributes` as repeated KeyValue in `field`, each value through the logger's redaction. */
function writeAttributes(w: ProtobufWriter, field: number, attributes: Attributes, known: readonly string[]) {
  for (const key in attributes) {
    if (!Object.hasOwn(attributes, key)) continue;
    const raw = attributes[key];
    const entry = keyEntry(key);
    const remembered = entry !== undefined && field === spanAttributes && typeof raw === 'string';
    if (remembered && raw === entry.lastText && entry.lastPair !== undefined) {
      w.raw(entry.lastPair);
      continue;
    }
    const value: AttributeValue | undefined = redactValue(key, raw, known);
    if (value === undefined) continue;
    const start = w.pos;
    writePair(w, field, key, entry, value);
    if (!remembered) continue;
    if (raw === entry.lastText) {
      entry.lastPair = w.bytesSince(start);
    } else {
      entry.lastText = raw;
      entry.lastPair = undefined;
    }
  }
}

const writeTime = (w: ProtobufWriter, field: number, time: HrTime) => {
  w.tag(field, bits64);
  w.hrTime(time[0], time[1]);
};

function writeEvent(w: ProtobufWriter, event: TimedEvent, known: readonly string[]): void {
  w.tag(11, delimited);
  const at = w.begin();
  writeTime(w, 1, event.time);
  w.tag(2, delimited);
  w.string(scrub(event.name, known));
  if (event.attributes) writeAttributes(w, 3, event.attributes, known);
  w.tag(4, varint);
  w.uint32(event.droppedAttributesCount ?? 0);
  w.end(at);
}

function writeLink(w: ProtobufWriter, link: Link, known: readonly string[]): void {
  const context = link.context;
  w.tag(13, delimited);
  const at = w.begin();
  writeIds(w, context);
  if (link.attributes) writeAttributes(w, 4, link.attributes, known);
  w.tag(5, varint);
  w.uint32(link.droppedAttributesCount ?? 0);
  w.tag(6, bits32);
  w.fixed32(spanFlags(context.traceFlags, context.isRemote));
  w.end(at);
}

/** trace_id, span_id and trace_state: fields 1–3 of both Span and Span.Link. */
function writeIds(w: ProtobufWriter, context: SpanContext): void {
  w.tag(1, delimited);
  w.hexBytes(context.traceId);
  w.tag(2, delimited);
  w.hexBytes(context.spanId);
  const traceState = context.traceState?.serialize();
  if (traceState) {
    w.tag(3, delimited);
    w.string(traceState);
  }
}

/** A ServerSpan's ids from its words, as writeIds would write their hex (it has no trace state). */
function writeServerSpanIds(w: ProtobufWriter, span: ServerSpan): void {
  w.tag(1, delimited);
  w.uint32(16);
  w.word(span.trace0);
  w.word(span.trace1);
  w.word(span.trace2);
  w.word(span.trace3);
  w.tag(2, delimited);
  w.uint32(8);
  w.word(span.span0);
  w.word(span.span1);
}

function writeSpan(w: ProtobufWriter, span: ReadableSpan, known: readonly string[]): void {
  w.tag(2, delimited);
  const at = w.begin();
  const server = span instanceof ServerSpan;
  if (server) writeServerSpanIds(w, span);
  else writeIds(w, span.spanContext());
  const parent = span.parentSpanContext;
  if (parent?.spanId) {
    w.tag(4, delimited);
    w.hexBytes(parent.spanId);
  }
  w.tag(5, delimited);
  w.string(scrub(span.name, known));
  // SpanKind counts from 1 on the wire: 0 is "unspecified".
  w.tag(6, varint);
  w.uint32(span.kind + 1);
  writeTime(w, 7, span.startTime);
  writeTime(w, 8, span.endTime);
  writeAttributes(w, 9, span.attributes, known);
  w.tag(10, varint);
  w.uint32(span.droppedAttributesCount);
  for (const event of span.events) writeEvent(w, event, known);
  w.tag(12, varint);
  w.uint32(span.droppedEventsCount);
  for (const link of span.links) writeLink(w, link, known);
  w.tag(14, varint);
  w.uint32(span.droppedLinksCount);
  w.tag(15, delimited);
  const status = w.begin();
  if (span.status.message) {
    w.tag(2, delimited);
    w.string(scrub(span.status.message, known));
  }
  w.tag(3, varint);
  w.uint32(span.status.code);
  w.end(status);
  w.tag(16, bits32);
  w.fixed32(spanFlags(server ? TraceFlags.SAMPLED : span.spanContext().traceFlags, parent?.isRemote));
  w.end(at);
}

function writeResource(w: ProtobufWriter, resource: Resource): void {
  w.tag(1, delimited);
  const at = w.begin();
  writeAttributes(w, 1, resource.attributes, []);
  w.tag(2, varint);
  w.uint32(0);
  w.end(at);
}

function writeScopeSpans(w: ProtobufWriter, spans: ReadableSpan[], known: readonly string[]): void {
  const scope = spans[0]!.instrumentationScope;
  w.tag(2, delimited);
  const at = w.begin();
  w.tag(1, delimited);
  const scopeAt = w.begin();
  w.tag(1, delimited);
  w.string(scope.name);
  if (scope.version) {
    w.tag(2, delimited);
    w.string(scope.version);
  }
  w.end(scopeAt);
  for (const span of spans) writeSpan(w, span, known);
  if (scope.schemaUrl) {
    w.tag(3, delimited);
    w.string(scope.schemaUrl);
  }
  w.end(at);
}

/** A scope's name, version and schema as one key: a tracer's scope and ServerSpan's are equal objects. */
const scopeKeys = new WeakMap<InstrumentationScope, string>();
function scopeKey(scope: InstrumentationScope): string {
  let key = scopeKeys.get(scope);
  if (key === undefined) {
    scopeKeys.set(scope, (key = `${scope.name}\n${scope.version ?? ''}\n${scope.schemaUrl ?? ''}`));
  }
  return key;
}

/** Spans by instrumentation scope, each in the order it came. */
function byScope(spans: readonly ReadableSpan[]): Map<string, ReadableSpan[]> {
  const scopes = new Map<string, ReadableSpan[]>();
  for (const span of spans) {
    const key = scopeKey(span.instrumentationScope);
    const list = scopes.get(key);
    if (list === undefined) scopes.set(key, [span]);
    else list.push(span);
  }
  return scopes;
}

/** A batch's size, for the next batch's first guess: a buffer that fits needs no copy to grow. */
let lastSize = 64 * 1024;

/**
 * An OTLP ExportTraceServiceRequest in protobuf, the spans under `resource` (the process's: one
 * tracer provider made them all), every text of every span through the logger's
 * redaction as redactSpan has it (names, attribute values, events, links' attributes, status
 * messages; `known`: the configured secret values). Field for field what the OTLP exporter's own
 * serializer writes for the redacted spans (which groups spans by scope object, where this groups
 * equal scopes as one), in one pass on the serving thread: a batch then leaves
 * for the export thread as bytes, moved rather than copied. Packing spans into plain data and
 * cloning them across cost that thread ~3 µs a span, and the export thread ~8 µs more to rebuild,
 * redact and encode them.
 */
export function encodeTraceRequest(
  spans: readonly ReadableSpan[],
  resource: Resource,
  known: readonly string[],
): Uint8Array {
  rememberPairsFor(known);
  const w = new ProtobufWriter(lastSize + (lastSize >> 3));
  if (spans.length > 0) {
    w.tag(1, delimited);
    const at = w.begin();
    writeResource(w, resource);
    for (const list of byScope(spans).values()) writeScopeSpans(w, list, known);
    if (resource.schemaUrl) {
      w.tag(3, delimited);
      w.string(resource.schemaUrl);
    }
    w.end(at);
  }
  lastSize = w.pos;
  return w.finish();
}
