import { parentPort, workerData } from 'node:worker_threads';

import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';

import { encodedBatchSender } from './encodedBatchSender.ts';
import type { ExportReply, ExportRequest, ExportThreadData } from './exportThread.ts';
import { RedactingSpanExporter } from './redactingExporter.ts';
import { unpackSpans, type WireSpans } from './wireSpan.ts';

/**
 * The export thread (see ThreadSpanExporter): the HTTP call to the collector, on a V8 heap of its
 * own, and with OTLP/JSON the redaction and encoding before it. The OTLP transport reads the
 * OTEL_EXPORTER_OTLP_* variables (endpoint, headers, compression, timeout) from this thread's copy
 * of the process environment.
 */
const data = workerData as ExportThreadData;
const port = parentPort!;

type Done = (result: ExportResult) => void;
type Sender = {
  encoded(body: Uint8Array, count: number, done: Done): void;
  spans(wire: WireSpans, done: Done): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
};

const wrongProtocol = (done: Done) =>
  done({ code: ExportResultCode.FAILED, error: new Error(`this export thread sends ${data.protocol}`) });

/** OTLP/JSON: spans rebuilt from plain data, redacted and encoded here; loaded only for that protocol. */
async function jsonSender(): Promise<Sender> {
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
  const resource = resourceFromAttributes(data.resourceAttributes);
  const exporter = new RedactingSpanExporter(new OTLPTraceExporter(), data.secrets);
  return {
    encoded: (_body, _count, done) => wrongProtocol(done),
    spans: (wire, done) => exporter.export(unpackSpans(wire, resource), done),
    forceFlush: () => exporter.forceFlush(),
    shutdown: () => exporter.shutdown(),
  };
}

function protobufSender(): Sender {
  const sender = encodedBatchSender();
  return {
    encoded: (body, count, done) => sender.send({ body, count }, done),
    spans: (_wire, done) => wrongProtocol(done),
    forceFlush: () => sender.forceFlush(),
    shutdown: () => sender.shutdown(),
  };
}

const sender = data.protocol === 'http/json' ? await jsonSender() : protobufSender();

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
  const done = (result: ExportResult) => reply(request.id, result);
  if (request.type === 'encoded') sender.encoded(request.body, request.count, done);
  else if (request.type === 'export') sender.spans(request.spans, done);
  else if (request.type === 'flush') settle(request.id, sender.forceFlush());
  else settle(request.id, sender.shutdown());
});
