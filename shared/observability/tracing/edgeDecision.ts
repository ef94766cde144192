import {
  type Context,
  createContextKey,
  isSpanContextValid,
  ROOT_CONTEXT,
  type Span,
  type SpanContext,
  trace,
  TraceFlags,
} from '@opentelemetry/api';

const sampledAtEdge = createContextKey('svc.sampled_at_edge');

/**
 * The context a request's root span starts in once the api has decided to sample it: the sampler
 * (EdgeSampler) records a root started here without deciding again.
 */
export const sampledRoot: Context = ROOT_CONTEXT.setValue(sampledAtEdge, true);

/** Whether `context` is sampledRoot's, with no span in it yet: only a root takes the edge's word. */
export function isSampledAtEdge(context: Context): boolean {
  return context.getValue(sampledAtEdge) === true && trace.getSpan(context) === undefined;
}

const idBytes = Buffer.alloc(16);

/**
 * `bytes` random bytes as lowercase hex, never all zeros (W3C: an all-zero id is invalid). Written
 * into one buffer and read out as hex, as the SDK makes its ids: building the text from numbers
 * (toString, padStart) cost ~1.7 µs a pair of ids, this ~0.3. Not the SDK's RandomIdGenerator
 * itself: exemplars.ts imports this file, and a worker with tracing off would load the SDK for it.
 */
function randomId(bytes: number): string {
  for (let at = 0; at < bytes; at += 4) idBytes.writeUInt32BE((Math.random() * 2 ** 32) >>> 0, at);
  // One chance in 2^64 at least: make such an id valid rather than draw again.
  let any = 0;
  for (let at = 0; at < bytes; at++) any |= idBytes[at]!;
  if (any === 0) idBytes[bytes - 1] = 1;
  return idBytes.toString('hex', 0, bytes);
}

/**
 * The span of a request the api decided not to sample: it records nothing, and its ids exist only
 * once something reads them (a log line's trace_id, a job's traceparent carrying the decision on),
 * so an unsampled call that logs nothing and adds no job costs one object. What the SDK's own
 * non-recording span would cost (its sampler, id generation, span metrics) was most of tracing's
 * price per call with one call in twenty sampled.
 */
export class UnsampledSpan implements Span {
  private ids: SpanContext | undefined;

  spanContext(): SpanContext {
    this.ids ??= { traceId: randomId(16), spanId: randomId(8), traceFlags: TraceFlags.NONE };
    return this.ids;
  }
  setAttribute(): this {
    return this;
  }
  setAttributes(): this {
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(): this {
    return this;
  }
  updateName(): this {
    return this;
  }
  end(): void {}
  isRecording(): boolean {
    return false;
  }
  recordException(): void {}
}

/** Whether `span` is sampled, without making an unsampled request's ids to find out. */
export function isSampled(span: Span): boolean {
  if (span instanceof UnsampledSpan) return false;
  const context = span.spanContext();
  return isSpanContextValid(context) && (context.traceFlags & TraceFlags.SAMPLED) !== 0;
}
