import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

import type { OtlpProtocol } from '../../config/config.ts';
import type { TracesSampler } from '../../config/tracesSampler.ts';
import { buildSampler } from './edgeSampler.ts';
import { ThreadSpanExporter } from './exportThread.ts';
import { exportServerSpansTo } from './serverSpan.ts';

export type Tracing = {
  /** Exports the spans still buffered, then stops: called last when the process stops. */
  shutdown(): Promise<void>;
};

export type TracingOptions = {
  /** Configured secret values, masked in every exported span as the logger masks them. */
  secrets: readonly string[];
  /** Queries as spans (`OTEL_NODE_ENABLED_INSTRUMENTATIONS=pg`): off by default, they cost the most. */
  databaseQueries: boolean;
  /** OTLP/HTTP's encoding (tracesProtocol): protobuf unless an operator's collector wants JSON. */
  protocol: OtlpProtocol;
  /** OTEL_TRACES_SAMPLER / _ARG as loadConfig validated them. */
  sampler: TracesSampler;
};

/**
 * The tracer provider (loaded only by startTracing, when tracing is on). Spans are the platform's
 * own: the api's server span (api/middleware/installServerSpan.ts), jobs, provider calls, webhook
 * deliveries; no Express, http or fetch instrumentation, whose spans cost a third of a request's
 * throughput and carried paths and URLs with tokens in them. The batch processor's queue is bounded
 * (OTEL_BSP_MAX_QUEUE_SIZE, 2048 by default: spans beyond it are dropped, never waited for); the
 * exporter reads the standard OTEL_* variables itself; the sampler is built from the two loadConfig
 * validated (buildSampler). Only W3C `traceparent` /
 * `tracestate` are propagated (no baggage), and only into our own jobs: nothing injects trace
 * context into calls to providers or webhook receivers.
 */
export async function installTracing(defaultServiceName: string, options: TracingOptions): Promise<Tracing> {
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: defaultServiceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const exporter = new ThreadSpanExporter({
    protocol: options.protocol,
    secrets: options.secrets,
    resourceAttributes: resource.attributes,
  });
  const processor = new BatchSpanProcessor(exporter);
  const provider = new NodeTracerProvider({
    resource,
    sampler: buildSampler(options.sampler),
    spanProcessors: [processor],
  });
  exportServerSpansTo(processor, resource);
  // The global tracer provider and the AsyncLocalStorage context manager.
  provider.register({ propagator: new W3CTraceContextPropagator() });
  if (options.databaseQueries) {
    const { registerInstrumentations } = await import('@opentelemetry/instrumentation');
    const { PgInstrumentation } = await import('@opentelemetry/instrumentation-pg');
    // Queries outside a trace are graphile-worker's polling and the LISTEN connections: noise.
    registerInstrumentations({
      tracerProvider: provider,
      instrumentations: [new PgInstrumentation({ requireParentSpan: true })],
    });
  }
  return { shutdown: () => provider.shutdown() };
}
