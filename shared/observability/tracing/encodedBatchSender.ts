import type { ExportResult } from '@opentelemetry/core';
import {
  convertLegacyHttpOptions,
  createOtlpHttpExportDelegate,
} from '@opentelemetry/otlp-exporter-base/node-http';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';

/** A batch the serving thread encoded (encodeTraceRequest): the request body and its span count. */
type EncodedBatch = { body: Uint8Array; count: number };

export type EncodedBatchSender = {
  send(batch: EncodedBatch, done: (result: ExportResult) => void): void;
  forceFlush(): Promise<void>;
  shutdown(): Promise<void>;
};

/**
 * OTLP/HTTP protobuf for request bodies already encoded: the OTLP exporter's own transport (the
 * OTEL_EXPORTER_OTLP_* and _TRACES_* variables, gzip, retries with back-off, timeouts, its bound on
 * exports in flight), built as the proto exporter builds it, with a serializer that passes the bytes
 * through in place of the one that encodes spans.
 */
export function encodedBatchSender(): EncodedBatchSender {
  const options = convertLegacyHttpOptions({}, 'TRACES', 'v1/traces', {
    'Content-Type': 'application/x-protobuf',
  });
  const delegate = createOtlpHttpExportDelegate<EncodedBatch, unknown>(
    options,
    {
      serializeRequest: (batch) => batch.body,
      // The collector's partial-success reply, logged by the delegate.
      deserializeResponse: (bytes) => ProtobufTraceSerializer.deserializeResponse(bytes),
    },
    'otlp_http_span_exporter',
    { name: 'span', countItems: (batch) => batch.count },
    undefined,
  );
  return {
    send: (batch, done) => delegate.export(batch, done),
    forceFlush: () => delegate.forceFlush(),
    shutdown: () => delegate.shutdown(),
  };
}
