import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from '@jest/globals';

import { alertRulesFile, operationsDir, prometheusSkipReason, promtool } from '../../helpers/prometheus.ts';

/**
 * The alert rules and the example configuration operators are given (docs/operations/), checked by
 * Debian's promtool: the rules load, their unit tests pass, and the configuration is valid with the
 * rule files it names.
 */
const skip = prometheusSkipReason();
const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

(skip ? describe.skip : describe)('docs/operations/ under promtool', () => {
  it('checks the alert rules', async () => {
    const checked = await promtool(['check', 'rules', alertRulesFile]);
    expect(checked.output).toMatch(/SUCCESS: \d+ rules found/);
    expect(checked.code).toBe(0);
  });

  it('passes the rules unit tests (each alert firing on its series, quiet on a near miss)', async () => {
    const tested = await promtool(['test', 'rules', 'alerts.test.yml']);
    expect(tested.output).toContain('SUCCESS');
    expect(tested.code).toBe(0);
  });

  it('accepts the example prometheus.yml with its rule file', async () => {
    // The example reads METRICS_TOKEN from a file promtool insists exists: a copy points at one.
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-promconfig-'));
    scratch.push(dir);
    const tokenFile = path.join(dir, 'svc-metrics-token');
    await writeFile(tokenFile, 'a-metrics-token\n');
    const example = await readFile(path.join(operationsDir, 'prometheus.yml'), 'utf8');
    expect(example).toContain('/etc/prometheus/svc-metrics-token');
    await writeFile(
      path.join(dir, 'prometheus.yml'),
      example.replaceAll('/etc/prometheus/svc-metrics-token', tokenFile),
    );
    await copyFile(alertRulesFile, path.join(dir, 'alerts.yml'));
    const checked = await promtool(['check', 'config', path.join(dir, 'prometheus.yml')]);
    expect(checked.output).toMatch(/SUCCESS: 1 rule files found/);
    expect(checked.code).toBe(0);
  });
});
