import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

import { decodeTraceRequest } from './otlpProtobuf.ts';

/** A span as an OTLP/JSON export carries it, with its resource's service name and flat attributes. */
export type ReceivedSpan = {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean | (string | number | boolean)[]>;
  /** The spans this one links to (a caller's span context it did not continue). */
  links: { traceId: string; spanId: string }[];
};

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};
type KeyValue = { key: string; value: AnyValue };
type ExportRequest = {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: KeyValue[];
        links?: { traceId: string; spanId: string }[];
      }[];
    }[];
  }[];
};

function valueOf(value: AnyValue): string | number | boolean | (string | number | boolean)[] {
  if (value.arrayValue !== undefined) {
    return (value.arrayValue.values ?? []).map((v) => valueOf(v) as string | number | boolean);
  }
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  return value.boolValue ?? '';
}

function attributesOf(list: KeyValue[] = []): ReceivedSpan['attributes'] {
  return Object.fromEntries(list.map((kv) => [kv.key, valueOf(kv.value)]));
}

function spansOf(request: ExportRequest): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        service,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId || undefined,
        name: span.name,
        kind: span.kind,
        attributes: attributesOf(span.attributes),
        links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
      })),
    );
  });
}

export type OtlpReceiver = {
  /** The endpoint to set as OTEL_EXPORTER_OTLP_ENDPOINT (the exporter adds /v1/traces). */
  endpoint: string;
  spans(): ReceivedSpan[];
  /** Every decoded export request's body as received, for a search of everything that left. */
  bodies(): string[];
  /** Export requests received (decoded or not). */
  exports(): number;
  /** Each export's content type, in order: application/x-protobuf or application/json. */
  encodings(): string[];
  /** Resolves with the spans received so far once `done` holds for them. */
  waitFor(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
};

/**
 * A local OTLP/HTTP trace receiver: decodes what the OTLP exporters send (protobuf, the default, or
 * JSON; gzipped when OTEL_EXPORTER_OTLP_COMPRESSION asks for it) and keeps every span. `decode:
 * false` (a bench) only counts the exports, so the receiver takes as little CPU as it can. Bodies are
 * kept as text either way: protobuf carries its strings as plain UTF-8, so a search finds them.
 */
export async function startOtlpReceiver(options: { decode?: boolean } = {}): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const encodings: string[] = [];
  let exports = 0;
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      exports += 1;
      encodings.push(String(req.headers['content-type']));
      const protobuf = req.headers['content-type'] === 'application/x-protobuf';
      // An empty message is an ExportTraceServiceResponse in either encoding.
      const ok = () =>
        protobuf
          ? res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
          : res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      if (options.decode === false) return ok();
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const text = body.toString('utf8');
      bodies.push(text);
      received.push(...spansOf(protobuf ? decodeTraceRequest(body) : (JSON.parse(text) as ExportRequest)));
      ok();
      for (const waiter of [...waiters]) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    bodies: () => [...bodies],
    exports: () => exports,
    encodings: () => [...encodings],
    waitFor: (done, timeoutMs = 30_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!done(received)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve([...received]);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`spans awaited did not arrive; received: ${received.map((s) => s.name).join(', ')}`),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
