import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import { openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../../helpers/otlpReceiver.ts';
import { logLines } from '../../helpers/processes.ts';
import {
  callerTraceparent,
  requestFrom,
  startTracedPlatform,
  type TracedPlatform,
} from '../../helpers/tracedPlatform.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let receiver: OtlpReceiver;
const platforms: TracedPlatform[] = [];

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  for (const p of platforms) await p.stop();
  await receiver.close();
  await t.close();
});

// The api trusts trace context from 127.0.0.2 only: a proxy of the operator's, beside any other
// loopback caller (127.0.0.1) it does not trust.
const proxy = '127.0.0.2';
const stranger = '127.0.0.1';

describe('a caller’s traceparent', () => {
  it('never forces sampling: at ratio 0 a stranger’s sampled calls export nothing; a trusted proxy’s continue', async () => {
    const api = await startTracedPlatform(t, receiver, {
      OTEL_SERVICE_NAME: 'svc-ratio-zero',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0',
      TRACE_CONTEXT_TRUST: `${proxy}/32`,
      // For a collector that wants JSON (the default is protobuf, tracing.test.ts).
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    });
    platforms.push(api);
    const callers = Array.from({ length: 5 }, callerTraceparent);
    for (const caller of callers) {
      const res = await requestFrom(stranger, `${api.base}/status`, {
        headers: { traceparent: caller.traceparent },
      });
      expect(res.status).toBe(200);
    }
    // The proxy's call comes after the strangers' have ended: once its span is exported, theirs
    // would have been too.
    const trusted = callerTraceparent();
    await requestFrom(proxy, `${api.base}/status`, { headers: { traceparent: trusted.traceparent } });
    const spans = await receiver.waitFor((all) => all.some((s) => s.traceId === trusted.traceId));
    expect(new Set(receiver.encodings())).toEqual(new Set(['application/json']));
    const strangerIds = new Set(callers.map((c) => c.traceId));
    expect(spans.filter((s) => strangerIds.has(s.traceId)).map((s) => s.name)).toEqual([]);
    const fromApi = spans.filter((s) => s.service === 'svc-ratio-zero');
    expect(fromApi).toHaveLength(1);
    expect(fromApi[0]).toMatchObject({
      name: 'GET /status',
      traceId: trusted.traceId,
      parentSpanId: trusted.spanId,
    });
  });
});

describe('with an always-on sampler, a trusted proxy, a provider and a webhook receiver', () => {
  let mock: OpenAiMock;
  let platform: TracedPlatform;
  const hookHeaders: Record<string, unknown>[] = [];
  let hooks: LoopbackServer;
  beforeAll(async () => {
    mock = await startOpenAiMock();
    hooks = await listenOnLoopback((req, res) => {
      hookHeaders.push(req.headers);
      req.resume().on('end', () => res.writeHead(204).end());
    });
    platform = await startTracedPlatform(
      t,
      receiver,
      { ...openaiEnv(mock), WEBHOOK_ALLOW_PRIVATE: 'true', TRACE_CONTEXT_TRUST: `${proxy}/32` },
      { worker: true },
    );
    platforms.push(platform);
  });
  afterAll(async () => {
    // Its worker would otherwise take later tests' jobs (any job of the database) to a closed mock.
    await platform.stop();
    await hooks.close();
    await mock.close();
  });

  it('a stranger’s traceparent is a link on a trace of our own', async () => {
    const caller = callerTraceparent();
    await requestFrom(stranger, `${platform.base}/status`, { headers: { traceparent: caller.traceparent } });
    const isCallers = (s: ReceivedSpan) =>
      s.traceId === caller.traceId || s.links.some((l) => l.traceId === caller.traceId);
    const spans = await receiver.waitFor((all) => all.some(isCallers));
    const span = spans.find(isCallers)!;
    expect(span.name).toBe('GET /status');
    expect(span.traceId).not.toBe(caller.traceId);
    expect(span.parentSpanId).toBeUndefined();
    expect(span.links).toEqual([{ traceId: caller.traceId, spanId: caller.spanId }]);
    expect(spans.filter((s) => s.traceId === caller.traceId)).toEqual([]);
  });

  it('tracestate and baggage reach neither the model provider nor a webhook receiver, even from a trusted proxy', async () => {
    await addWebhookEndpoint(t.deps.pool, tenant, `${hooks.origin}/hooks`, ['task.message.created']);
    const caller = callerTraceparent();
    const res = await requestFrom(proxy, `${platform.base}/api/pub/v1/tasks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.liveKey}`,
        'content-type': 'application/json',
        traceparent: caller.traceparent,
        tracestate: 'vendor=caller-state',
        baggage: 'user.id=caller-baggage',
      },
      body: JSON.stringify({ input: 'Reply and tell the webhook.' }),
    });
    expect(res.status).toBe(202);
    // Two message events: the caller's message, then the reply the provider wrote.
    await waitUntil(async () => (hookHeaders.length >= 2 ? true : undefined), 30_000);
    const chat = mock.requests.filter((r) => r.path === '/chat/completions');
    expect(chat.length).toBeGreaterThan(0);
    for (const headers of [...chat.map((r) => r.headers), ...hookHeaders]) {
      expect(headers).not.toHaveProperty('tracestate');
      expect(headers).not.toHaveProperty('baggage');
      expect(JSON.stringify(headers)).not.toMatch(/caller-(state|baggage)/);
    }
    // The trusted caller's trace was continued all the same, through the job to the provider call.
    const spans = await receiver.waitFor((all) =>
      all.some((s) => s.traceId === caller.traceId && s.name.startsWith('chat ')),
    );
    expect(spans.find((s) => s.traceId === caller.traceId && s.name === 'tasks.create')).toBeDefined();
    // The provider's span names its host and port, never its base URL's path.
    const chatSpan = spans.find((s) => s.traceId === caller.traceId && s.name.startsWith('chat '))!;
    const mockUrl = new URL(mock.baseUrl);
    expect(chatSpan.attributes).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'server.address': mockUrl.hostname,
      'server.port': Number(mockUrl.port),
    });
    expect(Object.keys(chatSpan.attributes).filter((k) => k.startsWith('url.'))).toEqual([]);
  });
});

describe('sampling decided at the edge (parent-based ratio)', () => {
  it('samples about the configured share of calls, each once: the edge’s word is not judged again', async () => {
    const api = await startTracedPlatform(t, receiver, {
      OTEL_SERVICE_NAME: 'svc-edge-half',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    });
    platforms.push(api);
    const calls = 200;
    for (let i = 0; i < calls; i++) {
      expect((await requestFrom(stranger, `${api.base}/status`)).status).toBe(200);
    }
    // Stopping exports what the process still holds: every span of those calls has arrived after it.
    await api.stop();
    const sampled = receiver.spans().filter((s) => s.service === 'svc-edge-half' && s.name === 'GET /status');
    // Binomial(200, 0.5): 100 ± 7; a decision taken twice would keep a quarter (50), none or all 0 or 200.
    expect(sampled.length).toBeGreaterThan(65);
    expect(sampled.length).toBeLessThan(135);
    expect(new Set(sampled.map((s) => s.traceId)).size).toBe(sampled.length);
  });

  it('with TRACE_SAMPLING_WINDOW_MS, samples the calls of whole windows, not calls one by one', async () => {
    // Half the time in windows of a second (one in each 2 s period): calls for 4.5 s meet at most
    // four windows, so some are sampled, some not, in at most four runs. Decided call by call at
    // one half, the hundreds of calls would be hundreds of runs.
    const api = await startTracedPlatform(t, receiver, {
      OTEL_SERVICE_NAME: 'svc-edge-window',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
      TRACE_SAMPLING_WINDOW_MS: '1000',
    });
    platforms.push(api);
    const ids: string[] = [];
    const until = performance.now() + 4_500;
    while (performance.now() < until) {
      const id = `window-call-${String(ids.length).padStart(4, '0')}`;
      const res = await requestFrom(stranger, `${api.base}/status`, { headers: { 'x-request-id': id } });
      expect(res.status).toBe(200);
      ids.push(id);
    }
    // Stopping exports what the process still holds.
    await api.stop();
    const exported = new Set(
      receiver
        .spans()
        .filter((s) => s.service === 'svc-edge-window')
        .map((s) => s.attributes['svc.request_id']),
    );
    const pattern = ids.map((id) => (exported.has(id) ? 's' : '-')).join('');
    expect(ids.length).toBeGreaterThan(100);
    expect(pattern).toMatch(/s/);
    expect(pattern).toMatch(/-/);
    expect(pattern.match(/s+/g)!.length).toBeLessThanOrEqual(4);
  });

  it('an unsampled call’s job stays unsampled on a worker that samples every trace it starts', async () => {
    const platform = await startTracedPlatform(
      t,
      receiver,
      {
        OTEL_SERVICE_NAME: 'svc-edge-none',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0',
      },
      {
        worker: true,
        workerEnv: {
          OTEL_SERVICE_NAME: 'svc-edge-worker',
          OTEL_TRACES_SAMPLER: 'parentbased_always_on',
          // Its provider call's line, with the trace id it ran in.
          LOG_LEVEL: 'debug',
        },
      },
    );
    platforms.push(platform);
    const res = await requestFrom(stranger, `${platform.base}/api/pub/v1/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Not traced.' }),
    });
    expect({ status: res.status, body: res.body }).toMatchObject({ status: 201 });
    await platform.stop();
    // The job ran in the call's trace: its provider call logged the api's (never exported) trace id.
    const line = logLines(platform.worker!.output()).find((l) => l.msg === 'provider call');
    expect(line?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    // Without the decision carried in the job, the always-on worker would have exported its job span.
    const exported = receiver
      .spans()
      .filter((s) => s.service === 'svc-edge-worker' || s.service === 'svc-edge-none');
    expect(exported.filter((s) => s.traceId === line!.trace_id)).toEqual([]);
    expect(exported.filter((s) => s.name === 'job text__generate')).toEqual([]);
  });
});
