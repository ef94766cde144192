import type { IncomingMessage } from 'node:http';

import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

/** Scrapes and probes arrive every few seconds and would each start a trace of their own. */
const untracedPaths = new Set(['/metrics', '/healthz']);

function isUntraced(request: IncomingMessage): boolean {
  return untracedPaths.has((request.url ?? '').split('?')[0] ?? '');
}

export type Tracing = {
  /** Exports the spans still buffered, then stops: called last when the process stops. */
  shutdown(): Promise<void>;
};

/**
 * The tracer provider and instrumentations (loaded only by startTracing, when tracing is on). The
 * exporter, the batch processor and the sampler read the standard OTEL_* variables themselves;
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the default resource.
 */
export function installTracing(defaultServiceName: string): Tracing {
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: defaultServiceName }).merge(
    detectResources({ detectors: [envDetector] }),
  );
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // The global tracer provider, W3C trace-context propagation and the AsyncLocalStorage context manager.
  provider.register();
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: isUntraced }),
      // Handlers only: a span per middleware and router (some twenty per request) costs more than it tells.
      new ExpressInstrumentation({
        ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER],
      }),
      // Queries outside a trace are graphile-worker's polling and the LISTEN connections: noise.
      new PgInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation(),
    ],
  });
  return { shutdown: () => provider.shutdown() };
}
