import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SpanKind, SpanStatusCode, TraceFlags } from '@opentelemetry/api';
import { type ExportResult, ExportResultCode, TraceState } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-node';

import { ThreadSpanExporter } from '../../../shared/observability/tracing/exportThread.ts';
import { type OtlpReceiver, startOtlpReceiver } from '../../helpers/otlpReceiver.ts';

const secret = 'hirefire-token-0123456789abcdef';
const parent = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
};

function span(n: number): ReadableSpan {
  const context = {
    traceId: parent.traceId,
    spanId: `00000000000000${String(n).padStart(2, '0')}`,
    traceFlags: TraceFlags.SAMPLED,
  };
  return {
    name: `GET /hirefire/${secret}/info`,
    kind: SpanKind.SERVER,
    spanContext: () => context,
    parentSpanContext: { ...parent, isRemote: true, traceState: new TraceState('vendor=value') },
    startTime: [1_700_000_000, 0],
    endTime: [1_700_000_000, 5_000_000],
    status: { code: SpanStatusCode.OK },
    attributes: {
      'http.route': '/hirefire/:token/info',
      'url.full': `https://example.test/hook?token=${secret}`,
      n,
    },
    links: [
      {
        context: {
          traceId: 'f'.repeat(32),
          spanId: 'e'.repeat(16),
          traceFlags: TraceFlags.NONE,
          isRemote: true,
        },
      },
    ],
    events: [],
    duration: [0, 5_000_000],
    ended: true,
    resource: resourceFromAttributes({}),
    instrumentationScope: { name: 'svc-api', version: '1' },
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

const exportOnce = (exporter: ThreadSpanExporter, spans: ReadableSpan[]) =>
  new Promise<ExportResult>((resolve) => exporter.export(spans, resolve));

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
});

/** An exporter to `endpoint`, giving up on an export after a second (the OTLP default retries for 10 s). */
function exporterTo(endpoint: string) {
  return new ThreadSpanExporter(
    {
      protocol: 'http/protobuf',
      secrets: [secret],
      resourceAttributes: { 'service.name': 'svc-thread-test' },
    },
    { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_EXPORTER_OTLP_TIMEOUT: '1000' },
  );
}

describe('spans exported through the export thread', () => {
  it('arrive whole: ids, parent, links, attributes and resource, redacted as the logger redacts', async () => {
    const exporter = exporterTo(receiver.endpoint);
    const result = await exportOnce(exporter, [span(1), span(2)]);
    expect(result.code).toBe(ExportResultCode.SUCCESS);
    const spans = await receiver.waitFor(
      (all) => all.filter((s) => s.service === 'svc-thread-test').length >= 2,
    );
    const mine = spans.filter((s) => s.service === 'svc-thread-test');
    expect(mine.map((s) => s.attributes.n).sort()).toEqual([1, 2]);
    expect(mine[0]).toMatchObject({
      traceId: parent.traceId,
      parentSpanId: parent.spanId,
      kind: 2,
      links: [{ traceId: 'f'.repeat(32), spanId: 'e'.repeat(16) }],
      attributes: { 'http.route': '/hirefire/:token/info', 'url.full': 'https://example.test/hook' },
    });
    // The configured value is masked in the name, and nothing of it left in any body.
    expect(mine[0]!.name).toBe('GET /hirefire/[redacted]/info');
    expect(receiver.bodies().some((body) => body.includes(secret))).toBe(false);
    await exporter.shutdown();
  });

  it('fails an export the collector refuses, and delivers the next once it is back', async () => {
    const down = await startOtlpReceiver();
    const endpoint = down.endpoint;
    await down.close();
    const exporter = exporterTo(endpoint);
    const failed = await exportOnce(exporter, [span(3)]);
    expect(failed.code).toBe(ExportResultCode.FAILED);
    expect(failed.error?.message).toBeTruthy();
    await exporter.shutdown();
    // A fresh exporter on a live collector: the thread's failure left nothing behind in the process.
    const live = exporterTo(receiver.endpoint);
    expect((await exportOnce(live, [span(4)])).code).toBe(ExportResultCode.SUCCESS);
    await live.shutdown();
  });

  it('fails what was in flight when the thread dies, and starts a new thread for the next export', async () => {
    // A collector that holds the first export unanswered, so it is in flight when the thread dies.
    let answer = false;
    const held: http.ServerResponse[] = [];
    let onHeld: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (onHeld = resolve));
    const collector = http.createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        answer
          ? res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
          : (held.push(res), onHeld()),
      );
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const exporter = exporterTo(`http://127.0.0.1:${(collector.address() as AddressInfo).port}`);
    const inFlight = exportOnce(exporter, [span(6)]);
    await arrived;
    await (exporter as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    expect((await inFlight).code).toBe(ExportResultCode.FAILED);
    answer = true;
    expect((await exportOnce(exporter, [span(7)])).code).toBe(ExportResultCode.SUCCESS);
    await exporter.shutdown();
    collector.closeAllConnections();
    await new Promise((resolve) => collector.close(resolve));
  });
});
