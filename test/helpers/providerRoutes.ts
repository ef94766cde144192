import type { AnthropicMock } from './anthropicMock.ts';
import type { OpenAiMock } from './openaiMock.ts';

type MockProvider = {
  mock: OpenAiMock | AnthropicMock;
  type?: 'openai' | 'anthropic';
  timeoutMs?: number;
  firstByteTimeoutMs?: number;
  breaker?: Record<string, number>;
  /** The upstream account's requests and tokens per minute (PROVIDERS budgets). */
  rpm?: number;
  tpm?: number;
};

/**
 * The environment of a PROVIDERS configuration (docs/providers.md) whose providers are the test's
 * mock servers: each named provider points at its mock and reads the mock's key from `<NAME>_KEY`.
 */
export function mockProvidersEnv(
  providers: Record<string, MockProvider>,
  // A route's places: "<provider>/<model>" entries, or balanced groups (docs/providers.md).
  rest: {
    routes: Record<string, unknown[]>;
    prices?: Record<string, unknown>;
    /** Named routes per capability, which a compatible API's `model` picks (docs/providers.md). */
    aliases?: Record<string, Record<string, unknown[]>>;
  },
): Record<string, string> {
  const keys: Record<string, string> = {};
  const named = Object.fromEntries(
    Object.entries(providers).map(([name, { mock, type = 'openai', ...options }]) => {
      const apiKeyEnv = `${name.toUpperCase()}_KEY`;
      keys[apiKeyEnv] = mock.apiKey;
      return [name, { type, baseUrl: mock.baseUrl, apiKeyEnv, ...options }];
    }),
  );
  return { ...keys, PROVIDERS: JSON.stringify({ providers: named, ...rest }) };
}

/** Text routed to `alpha` first and `beta` behind it, alpha's circuit opening as `breaker` says. */
export function alphaThenBetaEnv(
  alpha: OpenAiMock,
  beta: OpenAiMock,
  breaker: Record<string, number>,
): Record<string, string> {
  return mockProvidersEnv(
    { alpha: { mock: alpha, breaker }, beta: { mock: beta } },
    { routes: { text: ['alpha/gpt-alpha', 'beta/gpt-beta'] } },
  );
}
