import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { defaultPrices, textCost } from '../../../shared/config/prices.ts';
import { recordEvent } from '../../../shared/events/recordEvent.ts';
import { newId } from '../../../shared/primitives/ids.ts';
import { postAs, type TestContext } from '../../helpers/context.ts';
import type { Tenant } from '../../helpers/fixtures.ts';
import { listenOnLoopback, type LoopbackServer } from '../../helpers/loopbackServer.ts';
import {
  fetchWorkerMetrics,
  histogramCount,
  parseMetrics,
  sampleValue,
  workerMetricsEnv,
} from '../../helpers/metrics.ts';
import { contextWithTenant } from '../../helpers/tenantContext.ts';
import { addWebhookEndpoint } from '../../helpers/webhookEndpoints.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

let t: TestContext;
let tenant: Tenant;
let target: LoopbackServer;

beforeAll(async () => {
  ({ t, tenant } = await contextWithTenant({
    env: { ...(await workerMetricsEnv()), WEBHOOK_ALLOW_PRIVATE: 'true' },
    worker: true,
  }));
  target = await listenOnLoopback((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
});
afterAll(async () => {
  await target.close();
  await t.close();
});

const providerCalls = async (labels: Record<string, string>) => {
  const res = await fetchWorkerMetrics(t.config);
  const text = await res.text();
  expect(parseMetrics(text).get('svc_provider_request_duration_seconds')?.type).toBe('HISTOGRAM');
  return histogramCount(text, 'svc_provider_request_duration_seconds', labels);
};

describe('svc_provider_request_duration_seconds', () => {
  it('counts a live call to the configured provider, and none for a test key', async () => {
    const text = { provider: 'local', capability: 'text', outcome: 'ok' };
    const before = await providerCalls(text);
    await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'counted' }).expect(201);
    expect(await providerCalls(text)).toBe(before + 1);
    // A test key's fixture is not a provider call.
    await postAs(t.http, tenant.testKey, '/text').send({ prompt: 'fixture' }).expect(201);
    expect(await providerCalls(text)).toBe(before + 1);
  });

  it('adds the GenAI client metrics of a model call: its duration and its input and output tokens', async () => {
    const call = {
      gen_ai_operation_name: 'chat',
      gen_ai_provider_name: 'local',
      gen_ai_request_model: 'local-echo-1',
    };
    const read = async () => {
      const text = await (await fetchWorkerMetrics(t.config)).text();
      const families = parseMetrics(text);
      for (const family of ['gen_ai_client_token_usage', 'gen_ai_client_operation_duration_seconds']) {
        expect(families.get(family)?.type).toBe('HISTOGRAM');
      }
      return {
        duration: histogramCount(text, 'gen_ai_client_operation_duration_seconds', call),
        input: histogramCount(text, 'gen_ai_client_token_usage', { ...call, gen_ai_token_type: 'input' }),
        output: histogramCount(text, 'gen_ai_client_token_usage', { ...call, gen_ai_token_type: 'output' }),
      };
    };
    const before = await read();
    await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'counted by GenAI' }).expect(201);
    expect(await read()).toEqual({
      duration: before.duration + 1,
      input: before.input + 1,
      output: before.output + 1,
    });
  });

  it('counts webhook deliveries with capability webhook', async () => {
    const webhook = { provider: 'webhook', capability: 'webhook', outcome: 'ok' };
    const before = await providerCalls(webhook);
    await addWebhookEndpoint(t.deps.pool, tenant, `${target.origin}/hooks`, ['job.succeeded']);
    await t.deps.pool.transaction((tx) =>
      recordEvent(tx, {
        workspaceId: tenant.workspaceId,
        projectId: tenant.projectId,
        type: 'job.succeeded',
        data: { job: { id: newId('job'), type: 'ocr.extract', status: 'succeeded', result: null } },
      }),
    );
    // Observed once the receiver has answered: wait for the histogram, not a fixed time.
    await waitUntil(async () => ((await providerCalls(webhook)) === before + 1 ? true : undefined));
    expect(target.requests).toBe(1);
  });
});

describe('svc_provider_cost_minor_total', () => {
  it("adds each answered live call's cost at the price table, and nothing for a test key", async () => {
    const spent = async () =>
      sampleValue(
        parseMetrics(await (await fetchWorkerMetrics(t.config)).text()),
        'svc_provider_cost_minor_total',
        { provider: 'local', capability: 'text' },
      );
    const before = await spent();
    const res = await postAs(t.http, tenant.liveKey, '/text').send({ prompt: 'priced' }).expect(201);
    const usage = res.body.usage as { inputTokens: number; outputTokens: number };
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(await spent()).toBeCloseTo(before + textCost(defaultPrices, usage), 9);
    await postAs(t.http, tenant.testKey, '/text').send({ prompt: 'fixture' }).expect(201);
    expect(await spent()).toBeCloseTo(before + textCost(defaultPrices, usage), 9);
  });
});
