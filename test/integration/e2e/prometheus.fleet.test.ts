import { readFile } from 'node:fs/promises';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parse } from 'yaml';

import { freePort } from '../../../shared/embedded/freePort.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { type Fleet, startFleet } from '../../helpers/fleet.ts';
import { type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import {
  alertRulesFile,
  operationsDir,
  type Prometheus,
  prometheusSkipReason,
  startPrometheus,
} from '../../helpers/prometheus.ts';
import { alphaThenBetaEnv } from '../../helpers/providerRoutes.ts';
import { waitUntil } from '../api/tasks.helpers.ts';

/**
 * Debian's Prometheus scraping the Procfile's fleet (2 web + 2 worker processes, each worker on its
 * METRICS_PORT) every second, with docs/operations/alerts.yml loaded as shipped and evaluated every
 * second: the queue latency read through the PromQL HTTP API as an autoscaler reads it, and
 * ProviderCircuitOpen firing once the `alpha` provider's circuit opens.
 */
const skip = prometheusSkipReason();
const dashboardFile = path.join(operationsDir, 'grafana-dashboard.json');
let t: TestContext;
let tenant: Tenant;
let alpha: OpenAiMock;
let beta: OpenAiMock;
let fleet: Fleet | undefined;
let prometheus: Prometheus | undefined;

beforeAll(async () => {
  if (skip) return;
  [alpha, beta] = await Promise.all([startOpenAiMock(), startOpenAiMock()]);
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool, { credits: 1_000_000, rateLimitPerMinute: 100_000 });
  const workerPorts = [await freePort(), await freePort()];
  fleet = await startFleet(
    {
      // Two failures in a row open alpha's circuit, which then stays open past the test.
      ...alphaThenBetaEnv(alpha, beta, { failures: 2, windowSeconds: 60, cooldownSeconds: 300 }),
      DATABASE_URL: t.databaseUrl,
      S3_ENDPOINT: t.s3.endpoint,
      S3_BUCKET: t.s3.bucket,
      DATABASE_POOL_SIZE: '4',
      WORKER_CONCURRENCY: '2',
      LOG_LEVEL: 'info',
    },
    { webs: 2, workers: 2 },
    { workerEnv: (n) => ({ METRICS_PORT: String(workerPorts[n]!) }) },
  );
  prometheus = await startPrometheus({
    targets: {
      'svc-web': fleet.webs.map((w) => new URL(w.origin).host),
      'svc-worker': workerPorts.map((port) => `127.0.0.1:${port}`),
    },
    ruleFiles: [alertRulesFile],
    intervalSeconds: 1,
  });
  // Every process scraped once: the queries below read the fleet, not a half-started view of it.
  await waitUntil(async () => ((await scalar('count(up == 1)')) === 4 ? true : undefined), 30_000);
}, 180_000);

afterAll(async () => {
  for (const w of fleet?.workers ?? []) w.child.kill('SIGCONT');
  await prometheus?.stop();
  await fleet?.stop();
  await t?.close();
  await Promise.all([alpha?.close(), beta?.close()]);
});

/** A query's single value (undefined when it returns no series). */
async function scalar(expr: string): Promise<number | undefined> {
  const samples = await prometheus!.query(expr);
  if (samples.length > 1) throw new Error(`${expr} returned ${samples.length} series`);
  return samples[0]?.value;
}

function postText(key: string, prompt: string): Promise<Response> {
  return fetch(`${fleet!.webs[0]!.origin}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt }),
  });
}

// The query docs/operations.md gives KEDA's prometheus scaler: every web process reports the whole
// fleet's queue, so the processes' figures are one figure and max() reads it.
const autoscalerQuery = 'max(svc_job_queue_latency_seconds{lane="main"})';

(skip ? describe.skip : describe)('a real Prometheus scraping 2 web and 2 worker processes', () => {
  it("reads the fleet's queue latency per lane through PromQL, rising while no worker takes jobs", async () => {
    const lanes = await prometheus!.query('max by (lane) (svc_job_queue_latency_seconds)');
    expect(lanes.map((s) => s.metric.lane).sort()).toEqual(['main', 'ocr', 'video', 'webhooks']);
    expect(await scalar(autoscalerQuery)).toBe(0);

    // Both workers frozen, as a formation scaled to zero: a call's job waits in the queue.
    for (const w of fleet!.workers) w.child.kill('SIGSTOP');
    const postedAt = Date.now();
    const answer = postText(tenant.testKey, 'waits for a worker');
    const seen = await waitUntil(async () => {
      const latency = (await scalar(autoscalerQuery)) ?? 0;
      return latency >= 3 ? latency : undefined;
    }, 30_000);
    // The figure is the job's age: no older than the call.
    expect(seen).toBeLessThanOrEqual((Date.now() - postedAt) / 1000 + 1);

    for (const w of fleet!.workers) w.child.kill('SIGCONT');
    expect((await answer).status).toBe(201);
    await waitUntil(async () => ((await scalar(autoscalerQuery)) === 0 ? true : undefined), 30_000);
  }, 90_000);

  it('fires ProviderCircuitOpen once a provider fails often enough for its circuit to open', async () => {
    const alphaClosed = 'max(svc_provider_circuit_state{provider="alpha", state="closed"})';
    await waitUntil(async () => ((await scalar(alphaClosed)) === 1 ? true : undefined), 30_000);
    const circuitAlerts = async () =>
      (await prometheus!.alerts()).filter((a) => a.labels.alertname === 'ProviderCircuitOpen');
    expect(await circuitAlerts()).toEqual([]);

    // alpha fails twice in a row; each call falls over to beta and is answered there.
    for (const prompt of ['first failure', 'second failure']) {
      alpha.queueChat({ kind: 'status', status: 503, message: 'overloaded' });
      const res = await postText(tenant.liveKey, prompt);
      expect(res.status).toBe(201);
      expect(((await res.json()) as { model: string }).model).toMatch(/^beta\//);
    }

    const firing = await waitUntil(async () => {
      const alerts = await circuitAlerts();
      return alerts.some((a) => a.state === 'firing') ? alerts : undefined;
    }, 30_000);
    expect(firing).toEqual([
      expect.objectContaining({
        state: 'firing',
        labels: { alertname: 'ProviderCircuitOpen', provider: 'alpha', severity: 'warning' },
      }),
    ]);
    // The same alert as any PromQL client sees it.
    expect(await scalar('ALERTS{alertname="ProviderCircuitOpen", alertstate="firing"}')).toBe(1);
  }, 90_000);
});

type Panel = { type: string; title: string; targets?: { expr: string }[]; panels?: Panel[] };
type RuleGroups = { groups: { rules: { expr: string }[] }[] };

/** The PromQL the dashboard's panels and the alert rules run. */
async function shippedQueries(): Promise<{ where: string; expr: string }[]> {
  const dashboard = JSON.parse(await readFile(dashboardFile, 'utf8')) as { panels: Panel[] };
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const rules = parse(await readFile(alertRulesFile, 'utf8')) as RuleGroups;
  return [
    ...panels.flatMap((p) => (p.targets ?? []).map((target) => ({ where: p.title, expr: target.expr }))),
    ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: 'alerts.yml', expr: r.expr }))),
  ];
}

/**
 * The metric names an expression reads: its identifiers once label matchers and label lists
 * (`by (…)`, `on (…)`) are taken out, those of the platform's families and prom-client's.
 */
function metricNamesIn(expr: string): string[] {
  const bare = expr
    .replaceAll(/\{[^}]*\}/g, '')
    .replaceAll(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  return [...bare.matchAll(/\b(?:svc_|gen_ai_|nodejs_|process_)[a-z0-9_]*\b/g)].map((m) => m[0]);
}

(skip ? describe.skip : describe)('the shipped dashboard and rules against the fleet', () => {
  it('run every query without error, each reading a family the fleet exports', async () => {
    // A streamed call answered by a live provider, so the providers' per-call families have series.
    const streamed = await fetch(`${fleet!.webs[1]!.origin}/api/pub/v1/text`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'streamed', stream: true }),
    });
    expect(await streamed.text()).toMatch(/event: done/);

    const queries = await shippedQueries();
    expect(queries.length).toBeGreaterThan(25);
    // Grafana's interval variables, as it fills them in before querying.
    const asGrafanaSends = (expr: string) =>
      expr.replaceAll('$__rate_interval', '1m').replaceAll('$__range', '1h');
    const refused: string[] = [];
    for (const { where, expr } of queries) {
      await prometheus!.query(asGrafanaSends(expr)).catch((error: Error) => {
        refused.push(`${where}: ${error.message}`);
      });
    }
    expect(refused).toEqual([]);

    // Names stored once scraped: a family seen in any scrape of the file counts (the queue's
    // per-task depth has series only while jobs wait, as one did in the first test). What the calls
    // above added is stored within a scrape or two: wait for it rather than race it.
    const read = new Set(queries.flatMap((q) => metricNamesIn(q.expr)));
    expect(read).toContain('svc_job_queue_latency_seconds');
    const missing = async () => {
      const stored = await prometheus!.metricNames();
      // The GenAI client families come with the tracing half of issue 36; until a branch exports
      // them, only they may be missing, and once any is exported every one read must be.
      const genAiExported = stored.some((name) => name.startsWith('gen_ai_'));
      return [...read].filter(
        (name) => !stored.includes(name) && (genAiExported || !name.startsWith('gen_ai_')),
      );
    };
    await waitUntil(async () => ((await missing()).length === 0 ? true : undefined), 10_000).catch(
      () => undefined,
    );
    expect(await missing()).toEqual([]);
  }, 60_000);
});
