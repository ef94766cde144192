import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { z } from 'zod';

import { sql } from '../../../shared/db/sql.ts';
import { freePort } from '../../../shared/embedded/freePort.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback } from '../../helpers/loopbackServer.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../../helpers/otlpReceiver.ts';
import { logLines, type Spawned, spawnNode } from '../../helpers/processes.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let receiver: OtlpReceiver;
const processes: Spawned[] = [];
// The traced api and worker, started by the first traced test and used by the next.
let platform: { port: number; worker: Spawned; metricsPort: number };

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  for (const p of processes) await p.stop();
  await receiver.close();
  await t.close();
});

// OpenTelemetry's SpanKind, as OTLP numbers it (the API's enum plus one).
const serverKind = 2;

/** The api and a worker as separate processes on the context's database, exporting to `receiver`. */
async function startPlatform(env: Record<string, string>): Promise<typeof platform> {
  const port = await freePort();
  const metricsPort = await freePort();
  const shared = { DATABASE_URL: t.databaseUrl, S3_ENDPOINT: t.s3.endpoint, S3_BUCKET: t.s3.bucket, ...env };
  const web = spawnNode('api/server.ts', { ...shared, PORT: String(port) });
  processes.push(web);
  await web.waitFor(/api listening/);
  const worker = spawnNode('worker/main.ts', {
    ...shared,
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'debug',
    METRICS_PORT: String(metricsPort),
  });
  processes.push(worker);
  await worker.waitFor(/worker started/);
  return { port, worker, metricsPort };
}

const postText = (port: number, key: string, prompt: string) =>
  fetch(`http://127.0.0.1:${port}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt }),
  });

describe('without an OTLP endpoint', () => {
  it('stores no trace context with the jobs it adds', async () => {
    // The api alone: the streamed call's job stays queued, where its payload can be read (the public
    // jobs view leaves payloads out).
    const port = await freePort();
    const web = spawnNode('api/server.ts', {
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      PORT: String(port),
    });
    processes.push(web);
    await web.waitFor(/api listening/);
    const call = new AbortController();
    const res = await fetch(`http://127.0.0.1:${port}/api/pub/v1/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'not traced', stream: true }),
      signal: call.signal,
    });
    expect(res.status).toBe(201);
    const payload = await waitUntil(() =>
      t.deps.pool
        .maybeOneFirst(
          sql.type(z.object({ payload: z.record(z.string(), z.unknown()) }))`
        select j.payload from graphile_worker._private_jobs j
          join graphile_worker._private_tasks k on k.id = j.task_id
          where k.identifier = 'text__generate'
      `,
        )
        .then((p) => p ?? undefined),
    );
    call.abort();
    expect(payload.jobId).toMatch(/^job_/);
    expect(payload).not.toHaveProperty('trace');
    expect(await web.stop()).toBe(0);
    expect(logLines(web.output()).filter((line) => 'trace_id' in line)).toEqual([]);
    expect(receiver.spans()).toEqual([]);
  });
});

/** The chain of parents from `span` up to its trace's root. */
function ancestors(span: ReceivedSpan, all: ReceivedSpan[]): ReceivedSpan[] {
  const byId = new Map(all.filter((s) => s.traceId === span.traceId).map((s) => [s.spanId, s]));
  const chain: ReceivedSpan[] = [];
  for (let parent = byId.get(span.parentSpanId ?? ''); parent; parent = byId.get(parent.parentSpanId ?? '')) {
    chain.push(parent);
  }
  return chain;
}

describe('traces with OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  it('follow POST /text from the http span through its job to the provider call, as one trace', async () => {
    platform = await startPlatform({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
    const { port, worker } = platform;
    const res = await postText(port, tenant.liveKey, 'trace me');
    expect(res.status).toBe(201);
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toBeTruthy();

    const isCall = (s: ReceivedSpan) =>
      s.service === 'svc-api' && s.kind === serverKind && s.attributes['http.route'] === '/api/pub/v1/text';
    const spans = await receiver.waitFor((all) => {
      const call = all.find(isCall);
      const inTrace = all.filter((s) => s.traceId === call?.traceId);
      return (
        inTrace.some((s) => s.name === 'job text__generate') &&
        inTrace.some((s) => s.name === 'chat local-echo-1')
      );
    });
    // OTLP's default encoding: protobuf.
    expect(new Set(receiver.encodings())).toEqual(new Set(['application/x-protobuf']));
    const server = spans.find(isCall)!;
    const trace = spans.filter((s) => s.traceId === server.traceId);
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    const job = trace.find((s) => s.name === 'job text__generate')!;
    const provider = trace.find((s) => s.name === 'chat local-echo-1')!;

    expect(server.parentSpanId).toBeUndefined();
    // The job continues the api's trace: its parent is a span of the api process, under the http span.
    expect(job.service).toBe('svc-worker');
    let ancestor = byId.get(job.parentSpanId!);
    expect(ancestor?.service).toBe('svc-api');
    while (ancestor && ancestor !== server) {
      ancestor = ancestor.parentSpanId ? byId.get(ancestor.parentSpanId) : undefined;
    }
    expect(ancestor).toBe(server);
    expect(job.attributes).toMatchObject({ 'svc.job.task': 'text__generate', 'svc.job.attempt': 1 });
    expect(job.attributes['svc.job.id']).toMatch(/^job_/);
    // The provider call is the job span's child, with the GenAI attributes and its cost.
    expect(provider.parentSpanId).toBe(job.spanId);
    expect(provider.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'local',
      'gen_ai.request.model': 'local-echo-1',
      'gen_ai.response.model': 'local-echo-1',
      'svc.outcome': 'ok',
    });
    expect(provider.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
    expect(provider.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    expect(provider.attributes['svc.cost_minor']).toBeGreaterThanOrEqual(0);

    // The worker's log line of that call carries the trace and the provider span's ids.
    const line = logLines(worker.output()).find(
      (l) => l.msg === 'provider call' && l.trace_id === provider.traceId,
    );
    expect(line).toMatchObject({
      span_id: provider.spanId,
      capability: 'text',
      provider: 'local',
      outcome: 'ok',
    });
  });
});

describe('GenAI conventions with tracing on', () => {
  it('time a streamed reply’s first chunk on its span and in the metrics, with the trace as exemplar', async () => {
    const requestId = `req_streamed_${Date.now()}`;
    const res = await fetch(`http://127.0.0.1:${platform.port}/api/pub/v1/text`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.liveKey}`,
        'content-type': 'application/json',
        'x-request-id': requestId,
      },
      body: JSON.stringify({ prompt: 'stream me', stream: true }),
    });
    expect(res.status).toBe(201);
    await res.text();
    // This call's provider span: in the trace of the server span with this request id.
    const ofThisCall = (s: ReceivedSpan, all: ReceivedSpan[]) =>
      s.name === 'chat local-echo-1' &&
      all.some((c) => c.attributes['svc.request_id'] === requestId && c.traceId === s.traceId);
    const spans = await receiver.waitFor((all) => all.some((s) => ofThisCall(s, all)));
    const provider = spans.find((s) => ofThisCall(s, spans))!;
    expect(provider.attributes['gen_ai.request.stream']).toBe(true);
    expect(provider.attributes).toMatchObject({
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.request.max_tokens': expect.any(Number),
    });
    expect(provider.attributes['gen_ai.response.time_to_first_chunk']).toBeGreaterThan(0);
    expect(provider.attributes).not.toHaveProperty('gen_ai.system');

    // With tracing on the worker speaks OpenMetrics, whose histograms carry exemplars.
    const metrics = await fetch(`http://127.0.0.1:${platform.metricsPort}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^application\/openmetrics-text/);
    const text = await metrics.text();
    // Each bucket keeps its latest observation's exemplar: the streamed call's bucket names its span.
    const exemplars = (family: string) =>
      text
        .split('\n')
        .filter((line) => line.startsWith(`${family}_bucket{`) && line.includes(' # {'))
        .join('\n');
    const exemplar = `# {trace_id="${provider.traceId}",span_id="${provider.spanId}"}`;
    expect(exemplars('gen_ai_client_time_to_first_chunk_seconds')).toContain(exemplar);
    expect(exemplars('gen_ai_client_operation_duration_seconds')).toContain(exemplar);
    expect(text).toMatch(/^# EOF$/m);
  });
});

describe('a task reply traced across the queue', () => {
  it('reaches the webhook delivery its reply causes, under the reply job in the call’s trace', async () => {
    const hooks = await listenOnLoopback((req, res) =>
      req.resume().on('end', () => res.writeHead(204).end()),
    );
    try {
      await addWebhookEndpoint(t.deps.pool, tenant, `${hooks.origin}/hooks`, ['task.message.created']);
      const res = await fetch(`http://127.0.0.1:${platform.port}/api/pub/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ input: 'Reply and tell the webhook.' }),
      });
      expect(res.status).toBe(202);
      const isCall = (s: ReceivedSpan) =>
        s.service === 'svc-api' &&
        s.kind === serverKind &&
        s.attributes['http.route'] === '/api/pub/v1/tasks';
      // The reply's own message event is delivered from inside the reply job.
      const underReply = (s: ReceivedSpan, all: ReceivedSpan[]) =>
        ancestors(s, all).some((a) => a.name === 'job task__reply');
      const spans = await receiver.waitFor((all) => {
        const call = all.find(isCall);
        return all.some(
          (s) => s.traceId === call?.traceId && s.name === 'webhook deliver' && underReply(s, all),
        );
      });
      const call = spans.find(isCall)!;
      const inTrace = spans.filter((s) => s.traceId === call.traceId);
      const reply = inTrace.find((s) => s.name === 'job task__reply')!;
      expect(ancestors(reply, spans)).toContain(call);
      expect(inTrace.find((s) => s.name === 'chat local-echo-1')?.parentSpanId).toBe(reply.spanId);
      const delivery = inTrace.find((s) => s.name === 'webhook deliver' && underReply(s, spans))!;
      expect(ancestors(delivery, spans)[0]?.name).toBe('job webhook__deliver');
      expect(delivery.attributes).toMatchObject({
        'svc.webhook.event_type': 'task.message.created',
        'http.response.status_code': 204,
        'svc.outcome': 'ok',
      });
    } finally {
      await hooks.close();
    }
  });
});
