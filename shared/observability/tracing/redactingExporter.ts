import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';

import { redactSpan } from './redactSpan.ts';

/**
 * The one way spans leave a process: every span through redactSpan before `inner` (the OTLP
 * exporter) sees it, so no instrumentation, present or added later, can export what the logger
 * would have masked.
 */
export class RedactingSpanExporter implements SpanExporter {
  private readonly inner: SpanExporter;
  private readonly known: readonly string[];

  constructor(inner: SpanExporter, known: readonly string[]) {
    this.inner = inner;
    this.known = known;
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    this.inner.export(
      spans.map((span) => redactSpan(span, this.known)),
      resultCallback,
    );
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}
