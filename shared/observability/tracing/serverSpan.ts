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
import { type InstrumentationScope, millisToHrTime } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import {
  RandomIdGenerator,
  type ReadableSpan,
  type SpanProcessor,
  type TimedEvent,
} from '@opentelemetry/sdk-trace-node';

/** Where finished server spans go: the tracer provider's batch processor, under its resource. */
type Sink = { processor: SpanProcessor; resource: Resource };
let sink: Sink | undefined;
const ids = new RandomIdGenerator();
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

/**
 * The root span of a request the api sampled at the edge (installServerSpan): what the SDK's span
 * records, made with a tenth of its work. The SDK's validates each attribute against span limits,
 * converts every timestamp twice, and passes through the sampler, the processors' start hooks
 * and its own span metrics, all for a span whose decision, attributes and lifetime the middleware
 * already knows. It ends into the provider's batch processor as a ReadableSpan, and children (a
 * provider call, a job's span) start under it through the SDK as under any span.
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
  events: TimedEvent[] = [];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  endTime: HrTime = [0, 0];
  duration: HrTime = [0, 0];
  ended = false;
  readonly droppedAttributesCount = 0;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  private readonly context: SpanContext;
  private readonly clock: Clock;
  private readonly processor: SpanProcessor;

  /** Only where serverSpansExported(): a sampled root, kind SERVER, with `links` to a caller's span. */
  constructor(name: string, attributes: Attributes, links: Link[] = []) {
    const { processor, resource } = sink!;
    this.processor = processor;
    this.resource = resource;
    this.clock = { wall: Date.now(), perf: performance.now() };
    this.startTime = millisToHrTime(this.clock.wall);
    this.name = name;
    this.attributes = attributes;
    this.links = links;
    this.context = {
      traceId: ids.generateTraceId(),
      spanId: ids.generateSpanId(),
      traceFlags: TraceFlags.SAMPLED,
    };
  }

  spanContext(): SpanContext {
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
    if (!this.ended) this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  /** As the SDK has it: UNSET changes nothing, OK is final, only an ERROR keeps its message. */
  setStatus(status: SpanStatus): this {
    if (this.ended || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK)
      {return this;}
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

  end(endTime?: TimeInput): void {
    if (this.ended) return;
    const end = toPerf(endTime, this.clock);
    this.endTime = timeAt(this.clock, end);
    this.duration = millisToHrTime(Math.max(0, end - this.clock.perf));
    this.ended = true;
    this.processor.onEnd(this);
  }
}
