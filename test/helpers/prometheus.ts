import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { stringify } from 'yaml';

import { freePort } from '../../shared/embedded/freePort.ts';
import type { DebianPackage } from './debianPackages.ts';
import { projectRoot } from './processes.ts';

/** The alert rules, their promtool tests and the dashboard operators are given (docs/operations/). */
export const operationsDir = path.join(projectRoot, 'docs', 'operations');
export const alertRulesFile = path.join(operationsDir, 'alerts.yml');

/**
 * Debian's `prometheus` package (Prometheus 2.42 and promtool), which globalSetup installs when
 * missing; its recommends (node exporter and the like) are not needed.
 */
export const prometheusPackage: DebianPackage = {
  name: 'prometheus',
  binary: '/usr/bin/prometheus',
  skipVariable: 'SVC_TEST_PROMETHEUS_SKIP',
  tests: 'Prometheus tests',
  installArgs: ['--no-install-recommends'],
};
const promtoolBinary = '/usr/bin/promtool';

/** Why Prometheus tests cannot run here (apt-get unavailable), or undefined when they can. */
export function prometheusSkipReason(): string | undefined {
  return process.env[prometheusPackage.skipVariable];
}

/** Runs promtool with `args` from docs/operations/, resolving with its exit code and output. */
export function promtool(args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(promtoolBinary, args, { cwd: operationsDir }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}` });
    });
  });
}

/** One series of an instant query's answer. */
export type Sample = { metric: Record<string, string>; value: number };
/** An alert as GET /api/v1/alerts lists it. */
export type Alert = { labels: Record<string, string>; state: 'pending' | 'firing'; value: string };

export type Prometheus = {
  url: string;
  /** An instant query through the HTTP API, as an autoscaler or Grafana asks. @throws its error */
  query(expr: string): Promise<Sample[]>;
  /** The alerts pending or firing now. */
  alerts(): Promise<Alert[]>;
  /** Every metric name it has stored samples of (the series scraped so far and its rules' output). */
  metricNames(): Promise<string[]>;
  /** Prometheus's own output so far. */
  output(): string;
  stop(): Promise<void>;
};

type Answer<T> = { status: 'success'; data: T } | { status: 'error'; errorType: string; error: string };

/**
 * Starts Prometheus on a free loopback port with its data in a temp dir: `targets` scraped by job
 * name and `ruleFiles` evaluated, both every `intervalSeconds` (a test's seconds, not production's
 * tens of seconds). Resolves once it reports ready.
 */
export async function startPrometheus(options: {
  targets: Record<string, string[]>;
  ruleFiles: string[];
  intervalSeconds: number;
}): Promise<Prometheus> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-prometheus-'));
  const port = await freePort();
  const interval = `${options.intervalSeconds}s`;
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    rule_files: options.ruleFiles,
    scrape_configs: Object.entries(options.targets).map(([job, targets]) => ({
      job_name: job,
      static_configs: [{ targets }],
    })),
  };
  const configFile = path.join(dir, 'prometheus.yml');
  await writeFile(configFile, stringify(config));
  const child = spawn(
    prometheusPackage.binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const collect = (chunk: Buffer) => (output += chunk.toString('utf8'));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await whenReady(url, () => child.exitCode !== null || child.signalCode !== null);
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}:\n${output}`, { cause: error });
  }
  const api = async <T>(pathAndQuery: string): Promise<T> => {
    const answer = (await (await fetch(`${url}${pathAndQuery}`)).json()) as Answer<T>;
    if (answer.status !== 'success') throw new Error(`Prometheus ${answer.errorType}: ${answer.error}`);
    return answer.data;
  };
  return {
    url,
    query: async (expr) => {
      const data = await api<{ result: { metric: Record<string, string>; value: [number, string] }[] }>(
        `/api/v1/query?query=${encodeURIComponent(expr)}`,
      );
      return data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
    },
    alerts: async () => (await api<{ alerts: Alert[] }>('/api/v1/alerts')).alerts,
    metricNames: () => api<string[]>('/api/v1/label/__name__/values'),
    output: () => output,
    stop,
  };
}

/** Resolves once GET /-/ready answers 200; rejects when the process ends first or after 30 s. */
async function whenReady(url: string, ended: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (ended()) throw new Error('Prometheus exited before it was ready');
    const ready = await fetch(`${url}/-/ready`).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ready) return;
    if (Date.now() > deadline) throw new Error('Prometheus was not ready within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
