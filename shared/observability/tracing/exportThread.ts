import { Worker } from 'node:worker_threads';

import type { Attributes } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode } from '@opentelemetry/core';
import { type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-node';

import type { OtlpProtocol } from '../../config/config.ts';
import { encodeTraceRequest } from './otlpTraceEncoding.ts';
import { packSpans, type WireSpans } from './wireSpan.ts';

export type ExportThreadData = {
  protocol: OtlpProtocol;
  /** Configured secret values, masked in every exported span (RedactingSpanExporter). */
  secrets: readonly string[];
  resourceAttributes: Attributes;
};

/**
 * What the serving thread asks of the export thread: to send a batch already encoded (protobuf,
 * redacted: `count` spans), or to redact and encode one (OTLP/JSON), to flush, to stop.
 */
type ExportCall =
  | { type: 'encoded'; body: Uint8Array; count: number }
  | { type: 'export'; spans: WireSpans }
  | { type: 'flush' }
  | { type: 'shutdown' };

export type ExportRequest = { id: number } & ExportCall;

export type ExportReply = { id: number; code: ExportResultCode; error?: string };

/**
 * Spans leave through a worker thread: redaction, OTLP encoding and the HTTP call to the collector
 * run on a V8 heap of their own (exportWorker.ts). Run in the process, an export every few seconds
 * sent an HTTP client's requests, responses and sockets through the same Node stream and http
 * functions the api's own responses run through, as often as it took to undo the JIT's work on them:
 * measured side by side, the serving process answered 20–25 % fewer calls at one trace in twenty.
 * With protobuf (OTLP's default) this thread encodes a batch itself (encodeTraceRequest, redaction
 * included) and moves the bytes across, so the export thread only sends them; with OTLP/JSON it
 * copies the spans into plain data (packSpans) for the export thread to redact and encode.
 *
 * The thread starts with the exporter, and again with the next export after it dies (an export in
 * flight then fails, as one to a collector that is down fails). It keeps the process alive only while an export,
 * flush or shutdown waits on it, so shutdown's last flush is delivered and nothing else is held up.
 */
export class ThreadSpanExporter implements SpanExporter {
  private readonly data: ExportThreadData;
  private readonly resource: Resource;
  private readonly env: NodeJS.ProcessEnv;
  private worker: Worker | undefined;
  private nextId = 0;
  private readonly pending = new Map<number, (result: ExportResult) => void>();

  /** `env`: where the thread's OTLP exporter reads OTEL_EXPORTER_OTLP_* (the process's by default). */
  constructor(data: ExportThreadData, env: NodeJS.ProcessEnv = process.env) {
    this.data = data;
    this.resource = resourceFromAttributes(data.resourceAttributes);
    this.env = env;
    // Started now, with the process: loading the OTLP exporter takes the thread a few hundred ms of
    // CPU, which belongs to start-up rather than to the first calls served.
    this.thread();
  }

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    if (this.data.protocol === 'http/json') {
      this.call({ type: 'export', spans: packSpans(spans) }, resultCallback);
      return;
    }
    const body = encodeTraceRequest(spans, this.resource, this.data.secrets);
    this.call({ type: 'encoded', body, count: spans.length }, resultCallback, [body.buffer as ArrayBuffer]);
  }

  forceFlush(): Promise<void> {
    return new Promise((resolve) => this.call({ type: 'flush' }, () => resolve()));
  }

  async shutdown(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined) return;
    await new Promise<void>((resolve) => this.call({ type: 'shutdown' }, () => resolve()));
    await worker.terminate();
  }

  private call(
    request: ExportCall,
    done: (result: ExportResult) => void,
    transfer: ArrayBuffer[] = [],
  ): void {
    const worker = this.thread();
    const id = this.nextId++;
    this.pending.set(id, done);
    if (this.pending.size === 1) worker.ref();
    worker.postMessage({ id, ...request } satisfies ExportRequest, transfer);
  }

  private settle(id: number, result: ExportResult): void {
    const done = this.pending.get(id);
    if (done === undefined) return;
    this.pending.delete(id);
    if (this.pending.size === 0) this.worker?.unref();
    done(result);
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(new URL('./exportWorker.ts', import.meta.url), {
      workerData: this.data,
      env: this.env,
      // A batch is at most OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans (512 by default, about a megabyte as
      // the thread holds them). A thread that outgrows this stops, and the next batch starts another,
      // rather than the process growing. The young generation is the OTLP encoder's garbage: at 4 MB
      // the thread spent a fifth of its time collecting it (12.4–13.9 µs of CPU a span in all, at
      // every request sampled); at 16 MB 10.1–10.6 µs, for 3–8 MB more resident.
      resourceLimits: { maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 48 },
    });
    worker.unref();
    worker.on('message', (reply: ExportReply) =>
      this.settle(reply.id, {
        code: reply.code,
        ...(reply.error !== undefined && { error: new Error(reply.error) }),
      }),
    );
    const lost = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const id of [...this.pending.keys()]) this.settle(id, { code: ExportResultCode.FAILED, error });
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`the span export thread stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }
}
