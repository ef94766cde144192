import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { commands } from '../../../cli/admin.ts';
import { loadConfig } from '../../../shared/config/config.ts';
import { CircuitBreaker } from '../../../shared/providers/circuitBreaker.ts';
import { admin } from '../../helpers/cli.ts';
import type { TestContext } from '../../helpers/context.ts';
import { contextForCli } from '../../helpers/tenantContext.ts';

let t: TestContext;
let env: Record<string, string>;

const providers = {
  providers: {
    primary: {
      type: 'openai',
      baseUrl: 'http://127.0.0.1:9/v1',
      breaker: { failures: 2, cooldownSeconds: 600 },
    },
    claude: { type: 'anthropic', apiKeyEnv: 'CLAUDE_TEST_KEY' },
    offline: { type: 'local' },
  },
  routes: {
    text: ['primary/gpt-x', 'claude/claude-y', 'offline/echo'],
    embedding: ['primary/embed-x', 'offline/hash'],
  },
};

beforeAll(async () => {
  ({ t, env } = await contextForCli());
  env = { ...env, PROVIDERS: JSON.stringify(providers), CLAUDE_TEST_KEY: 'sk-ant-cli-test-000001' };
});
afterAll(() => t.close());

describe('admin -- providers status', () => {
  it("prints each provider's routed capabilities and the circuit the fleet shares", async () => {
    // Two failures of `primary`, as two worker processes would record them: its circuit opens.
    const breaker = new CircuitBreaker(t.deps.pool, () => ({
      failures: 2,
      windowMs: 60_000,
      cooldownMs: 600_000,
      trialMs: 1000,
    }));
    const before = Date.now();
    await breaker.failed('primary');
    await breaker.failed('primary');
    await breaker.failed('claude', 30_000);
    const result = await admin(['providers', 'status'], env);
    expect(result).toMatchObject({ code: 0, stderr: null });
    const printed = (result.stdout as { providers: Record<string, unknown>[] }).providers;
    expect(printed).toEqual([
      {
        name: 'primary',
        type: 'openai',
        capabilities: ['text', 'embedding'],
        state: 'open',
        failures: 2,
        openUntil: expect.any(String),
      },
      {
        name: 'claude',
        type: 'anthropic',
        capabilities: ['text'],
        state: 'open',
        failures: 1,
        openUntil: expect.any(String),
      },
      {
        name: 'offline',
        type: 'local',
        capabilities: ['text', 'embedding'],
        state: 'closed',
        failures: 0,
        openUntil: null,
      },
    ]);
    const one = await commands['providers status']!.run(
      t.deps.pool,
      { provider: 'claude' },
      loadConfig({ ...process.env, ...env }),
    );
    expect(one).toEqual({ providers: [printed[1]] });
    await expect(
      commands['providers status']!.run(
        t.deps.pool,
        { provider: 'nobody' },
        loadConfig({ ...process.env, ...env }),
      ),
    ).rejects.toThrow('--provider must be one of primary, claude, offline');
    const openFor = Date.parse(String(printed[0]!.openUntil)) - before;
    expect(openFor).toBeGreaterThanOrEqual(600_000 - 1000);
    expect(openFor).toBeLessThanOrEqual(600_000 + 60_000);
  });

  it('refuses a bad PROVIDERS with the field named, as every process does at start-up', async () => {
    const bad = { ...providers, routes: { text: ['nobody/x'] } };
    const result = await admin(['providers', 'status'], { ...env, PROVIDERS: JSON.stringify(bad) });
    expect(result).toEqual({
      code: 1,
      stdout: null,
      stderr: {
        error: {
          code: 'invalid_configuration',
          message:
            'Invalid configuration:\n  PROVIDERS.routes.text[0]: no provider named nobody in PROVIDERS.providers',
        },
      },
    });
  });
});
