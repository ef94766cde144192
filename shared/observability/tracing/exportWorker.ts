import { parentPort, workerData } from 'node:worker_threads';

import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';

import type { ExportReply, ExportRequest, ExportThreadData } from './exportThread.ts';
import { RedactingSpanExporter } from './redactingExporter.ts';
import { unpackSpans } from './wireSpan.ts';

/**
 * The export thread (see ThreadSpanExporter): redaction, OTLP encoding and the HTTP call to the
 * collector, on a V8 heap of its own. The OTLP exporter reads the OTEL_EXPORTER_OTLP_* variables
 * from this thread's copy of the process environment.
 */
const data = workerData as ExportThreadData;
const resource = resourceFromAttributes(data.resourceAttributes);
// Only the encoding in use is loaded: the thread's memory is the process's.
const { OTLPTraceExporter } =
  data.protocol === 'http/json'
    ? await import('@opentelemetry/exporter-trace-otlp-http')
    : await import('@opentelemetry/exporter-trace-otlp-proto');
const otlp = new OTLPTraceExporter();
const exporter = new RedactingSpanExporter(otlp, data.secrets);
const port = parentPort!;

function reply(id: number, result: ExportResult): void {
  const message: ExportReply = {
    id,
    code: result.code,
    ...(result.error && { error: result.error.message }),
  };
  port.postMessage(message);
}

function settle(id: number, work: Promise<void>): void {
  work.then(
    () => reply(id, { code: ExportResultCode.SUCCESS }),
    (error: unknown) =>
      reply(id, {
        code: ExportResultCode.FAILED,
        error: error instanceof Error ? error : new Error(String(error)),
      }),
  );
}

port.on('message', (request: ExportRequest) => {
  if (request.type === 'export') {
    exporter.export(unpackSpans(request.spans, resource), (result) => reply(request.id, result));
  } else if (request.type === 'flush') {
    settle(request.id, exporter.forceFlush());
  } else {
    settle(request.id, exporter.shutdown());
  }
});
