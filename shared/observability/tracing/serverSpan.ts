import {
  type Attributes,
  type AttributeValue,
  type Exception,
  type HrTime,
  type Link,
  type Span,
  type SpanContext,
  SpanKind,
  type SpanStatus,
  SpanStatusCode,
  type TimeInput,
  TraceFlags,
} from '@opentelemetry/api';
import { hrTimeDuration, type InstrumentationScope, millisToHrTime } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { type ReadableSpan, type SpanProcessor, type TimedEvent } from '@opentelemetry/sdk-trace-node';

/** Where finished server spans go: the tracer provider's batch processor, under its resource. */
type Sink = { processor: SpanProcessor; resource: Resource };
let sink: Sink | undefined;
const scope: InstrumentationScope = { name: 'svc-api' };

/** Called by installTracing: server spans from now on are exported with the provider's own. */
export function exportServerSpansTo(processor: SpanProcessor, resource: Resource): void {
  sink = { processor, resource };
}

/** Whether this process exports server spans (tracing is on and installed). */
export function serverSpansExported(): boolean {
  return sink !== undefined;
}

/** Wall-clock ms of a performance.now() reading, as the SDK keeps it: anchored at the span's start. */
type Clock = { wall: number; perf: number };
const timeAt = (clock: Clock, perf: number): HrTime => millisToHrTime(clock.wall + (perf - clock.perf));

/** A TimeInput as a performance.now() reading: a number up to now is one already (as the SDK reads it). */
function toPerf(time: TimeInput | undefined, clock: Clock): number {
  const now = performance.now();
  if (time === undefined) return now;
  if (typeof time === 'number') return time <= now ? time : clock.perf + (time - clock.wall);
  if (time instanceof Date) return clock.perf + (time.getTime() - clock.wall);
  return clock.perf + (time[0] * 1e3 + time[1] / 1e6 - clock.wall);
}

/** A random 32-bit word as a signed integer (V8 keeps those in the object, unboxed). */
const word = () => (Math.random() * 2 ** 32) | 0;

/** Shared until a span has one of its own: most server spans never get an event, a link or a status. */
const none: never[] = [];
const unset: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET });
/** endTime until the span ends (the SDK's is [0, 0] too). */
const notEnded: HrTime = Object.freeze([0, 0]) as unknown as HrTime;
const idText = Buffer.alloc(24);
// Buffer's writeInt32BE checks its arguments on every call; a DataView's setter is inlined.
const idWords = new DataView(idText.buffer, idText.byteOffset, 24);

/**
 * The root span of a request the api sampled at the edge (installServerSpan): what the SDK's span
 * records, made with a tenth of its work. The SDK's validates each attribute against span limits,
 * converts every timestamp twice, and passes through the sampler, the processors' start hooks
 * and its own span metrics, all for a span whose decision, attributes and lifetime the middleware
 * already knows. It ends into the provider's batch processor as a ReadableSpan, and children (a
 * provider call, a job's span) start under it through the SDK as under any span.
 *
 * It waits in the batch processor's queue for seconds, so it holds as few objects as it can: its ids
 * as six 32-bit words the encoder writes as bytes without parsing hex (the hex is made once, when
 * first read: the batch processor reads it as the span ends), no arrays of its own for events, links
 * or a status until it has one, its duration computed when asked. A span kept
 * that long outlives the young generation: each object it held was copied and promoted, and the
 * garbage collector's share was a fifth of what a sampled call added.
 */
export class ServerSpan implements Span, ReadableSpan {
  readonly kind = SpanKind.SERVER;
  readonly parentSpanContext = undefined;
  readonly instrumentationScope = scope;
  readonly resource: Resource;
  readonly startTime: HrTime;
  name: string;
  attributes: Attributes;
  links: Link[];
  events: TimedEvent[] = none;
  status: SpanStatus = unset;
  endTime: HrTime = notEnded;
  /** The trace id's words, high first, then the span id's (read by the encoder, never changed). */
  readonly trace0 = word();
  readonly trace1 = word();
  readonly trace2 = word();
  // An all-zero id is invalid (W3C): a low word of 0 is made 1.
  readonly trace3 = word() || 1;
  readonly span0 = word();
  readonly span1 = word() || 1;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  private context: SpanContext | undefined;
  private readonly clock: Clock;
  private readonly processor: SpanProcessor;

  /** Only where serverSpansExported(): a sampled root, kind SERVER, with `links` to a caller's span. */
  constructor(name: string, attributes: Attributes, links: Link[] = none) {
    const { processor, resource } = sink!;
    this.processor = processor;
    this.resource = resource;
    this.clock = { wall: Date.now(), perf: performance.now() };
    this.startTime = millisToHrTime(this.clock.wall);
    this.name = name;
    this.attributes = attributes;
    this.links = links;
  }

  get ended(): boolean {
    return this.endTime !== notEnded;
  }

  get duration(): HrTime {
    return this.ended ? hrTimeDuration(this.startTime, this.endTime) : [0, 0];
  }

  spanContext(): SpanContext {
    if (this.context !== undefined) return this.context;
    idWords.setInt32(0, this.trace0);
    idWords.setInt32(4, this.trace1);
    idWords.setInt32(8, this.trace2);
    idWords.setInt32(12, this.trace3);
    idWords.setInt32(16, this.span0);
    idWords.setInt32(20, this.span1);
    this.context = {
      traceId: idText.toString('hex', 0, 16),
      spanId: idText.toString('hex', 16, 24),
      traceFlags: TraceFlags.SAMPLED,
    };
    return this.context;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (!this.ended && value !== undefined && value !== null) this.attributes[key] = value;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const isTime =
      attributesOrTime instanceof Date ||
      Array.isArray(attributesOrTime) ||
      typeof attributesOrTime === 'number';
    const at = toPerf(isTime ? (attributesOrTime as TimeInput) : time, this.clock);
    if (this.events === none) this.events = [];
    this.events.push({
      name,
      time: timeAt(this.clock, at),
      ...(!isTime &&
        attributesOrTime !== undefined && { attributes: { ...(attributesOrTime as Attributes) } }),
      droppedAttributesCount: 0,
    });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links === none) this.links = [];
    this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  /** As the SDK has it: UNSET changes nothing, OK is final, only an ERROR keeps its message. */
  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) {
      return this;
    }
    const message =
      status.code === SpanStatusCode.ERROR && typeof status.message === 'string' ? status.message : undefined;
    this.status = message === undefined ? { code: status.code } : { code: status.code, message };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') {
      attributes['exception.message'] = exception;
    } else {
      const type = exception.code?.toString() ?? exception.name;
      if (type) attributes['exception.type'] = type;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] !== undefined || attributes['exception.message'] !== undefined) {
      this.addEvent('exception', attributes, time);
    }
  }

  isRecording(): boolean {
    return !this.ended;
  }

  /**
   * Ends a request's span in one step, named `name`, with `attributes` (every value defined) added:
   * the middleware's close, which knows them all at once (setAttributes adds them one key at a time).
   */
  finish(name: string, attributes: Attributes, failed: boolean): void {
    if (this.ended) return;
    this.name = name;
    this.attributes =
      Object.keys(this.attributes).length === 0 ? attributes : { ...this.attributes, ...attributes };
    if (failed) this.setStatus({ code: SpanStatusCode.ERROR });
    this.end();
  }

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    const end = toPerf(endTime, this.clock);
    this.endTime = timeAt(this.clock, Math.max(end, this.clock.perf));
    this.processor.onEnd(this);
  }
}
