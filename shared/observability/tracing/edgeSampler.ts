import type { Attributes, Context, Link, SpanKind } from '@opentelemetry/api';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  type Sampler,
  SamplingDecision,
  type SamplingResult,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-node';

import type { TracesSampler } from '../../config/tracesSampler.ts';
import { isSampledAtEdge } from './edgeDecision.ts';

/**
 * The configured sampler, except for a root the api already decided to sample (sampledRoot): the
 * api makes a parent-based sampler's root decision per request before any span exists, so an
 * unsampled call never reaches the SDK (see installServerSpan), and a sampled one must not be
 * judged twice.
 */
class EdgeSampler implements Sampler {
  private readonly inner: Sampler;

  constructor(inner: Sampler) {
    this.inner = inner;
  }

  shouldSample(
    context: Context,
    traceId: string,
    name: string,
    kind: SpanKind,
    attributes: Attributes,
    links: Link[],
  ): SamplingResult {
    if (isSampledAtEdge(context)) return { decision: SamplingDecision.RECORD_AND_SAMPLED };
    return this.inner.shouldSample(context, traceId, name, kind, attributes, links);
  }

  toString(): string {
    return `EdgeSampler{${this.inner.toString()}}`;
  }
}

/** OTEL_TRACES_SAMPLER / _ARG (validated by loadConfig) as the SDK's samplers, behind EdgeSampler. */
export function buildSampler(config: TracesSampler): Sampler {
  const root = config.name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : config.name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(config.ratio);
  return new EdgeSampler(config.name.startsWith('parentbased_') ? new ParentBasedSampler({ root }) : root);
}
