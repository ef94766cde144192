import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { describe, expect, it } from '@jest/globals';

import { configSecrets, loadConfig } from '../../shared/config/config.ts';
import { defaultPrices } from '../../shared/config/prices.ts';
import { routeTimeoutMs } from '../../shared/config/providersConfig.ts';

const base = { DATABASE_URL: 'postgres://u:p@localhost:5432/db' };
const load = (env: Record<string, string>) => loadConfig({ ...base, ...env });
const failure = (env: Record<string, string>) => {
  try {
    load(env);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('the configuration was accepted');
};

const gateway = {
  providers: {
    openai: { type: 'openai', apiKeyEnv: 'OPENAI_KEY', timeoutMs: 20_000 },
    ollama: { type: 'openai', baseUrl: 'http://127.0.0.1:11434/v1/' },
    claude: { type: 'anthropic', apiKeyEnv: 'ANTHROPIC_KEY', breaker: { failures: 3, cooldownSeconds: 10 } },
  },
  routes: {
    text: ['claude/claude-sonnet-4-5', 'openai/gpt-4o-mini', 'ollama/llama3.1:8b'],
    image: ['openai/gpt-image-1'],
  },
  prices: { 'ollama/llama3.1:8b': { textInputPer1MTokens: 0, textOutputPer1MTokens: 0 } },
};
const keys = { OPENAI_KEY: 'sk-openai-secret-0001', ANTHROPIC_KEY: 'sk-ant-secret-0002' };

describe('PROVIDERS', () => {
  it('is the one local provider for every capability when neither PROVIDERS nor PROVIDER is set', () => {
    const { providers, routes } = load({}).providers;
    expect(Object.keys(providers)).toEqual(['local']);
    expect(routes.text).toEqual([{ provider: 'local', model: 'local-echo-1', prices: defaultPrices }]);
    expect(routes.transcription[0]).toMatchObject({
      provider: 'local',
      model: 'local-offline-transcriber-1',
    });
  });

  it('keeps PROVIDER=openai and OPENAI_* working as the one-provider case, at PRICES', () => {
    const config = load({
      PROVIDER: 'openai',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1/',
      OPENAI_API_KEY: 'sk-single-key-000003',
      OPENAI_EMBEDDING_MODEL: 'embed-small',
      PRICES: JSON.stringify({ imagePerImage: 9 }),
    });
    expect(config.providers.providers.openai).toMatchObject({
      type: 'openai',
      baseUrl: 'http://127.0.0.1:9/v1',
      apiKey: 'sk-single-key-000003',
      timeoutMs: 120_000,
    });
    expect(config.providers.routes.embedding).toMatchObject([{ provider: 'openai', model: 'embed-small' }]);
    expect(config.providers.routes.image[0]!.prices.imagePerImage).toBe(9);
  });

  it('reads named providers, ordered routes and prices per provider/model laid over PRICES', () => {
    const config = load({ ...keys, PROVIDERS: JSON.stringify(gateway), PRICES: '{"imagePerImage": 7}' });
    const { providers, routes } = config.providers;
    expect(providers.openai).toEqual({
      name: 'openai',
      type: 'openai',
      baseUrl: 'https://api.openai.com/v1',
      apiKey: keys.OPENAI_KEY,
      timeoutMs: 20_000,
      // Old documents keep their meaning: the first byte may take as long as the whole call did.
      firstByteTimeoutMs: 20_000,
      breaker: { failures: 5, windowMs: 60_000, cooldownMs: 30_000 },
      budget: { rpm: null, tpm: null },
    });
    expect(providers.ollama).toMatchObject({ baseUrl: 'http://127.0.0.1:11434/v1', apiKey: undefined });
    expect(providers.claude).toMatchObject({
      baseUrl: 'https://api.anthropic.com',
      apiKey: keys.ANTHROPIC_KEY,
    });
    expect(routes.text.map((e) => `${e.provider}/${e.model}`)).toEqual(gateway.routes.text);
    expect(routes.text[2]!.prices).toEqual({
      ...config.prices,
      textInputPer1MTokens: 0,
      textOutputPer1MTokens: 0,
    });
    expect(routes.text[1]!.prices).toEqual({ ...defaultPrices, imagePerImage: 7 });
    expect(routes.image[0]!.prices.imagePerImage).toBe(7);
    // A capability without a route has none: calls for it fail rather than go somewhere unnamed.
    expect(routes.embedding).toEqual([]);
    // Reserved at the route's dearest entry (here the ones at PRICES, not the free local model).
    expect(config.reservationPrices.text).toEqual({ ...defaultPrices, imagePerImage: 7 });
    expect(config.reservationPrices.embedding).toEqual(config.prices);
    expect(configSecrets(config)).toEqual(expect.arrayContaining(Object.values(keys)));
  });

  it('reads a first-byte deadline per provider, at most its timeoutMs', () => {
    const withFirstByte = {
      ...gateway,
      providers: { ...gateway.providers, openai: { ...gateway.providers.openai, firstByteTimeoutMs: 5000 } },
    };
    const { providers } = load({ ...keys, PROVIDERS: JSON.stringify(withFirstByte) }).providers;
    expect(providers.openai).toMatchObject({ timeoutMs: 20_000, firstByteTimeoutMs: 5000 });
    expect(providers.ollama).toMatchObject({ timeoutMs: 120_000, firstByteTimeoutMs: 120_000 });
    const tooLong = (firstByteTimeoutMs: unknown) => ({
      ...gateway,
      providers: { ...gateway.providers, openai: { ...gateway.providers.openai, firstByteTimeoutMs } },
    });
    expect(failure({ ...keys, PROVIDERS: JSON.stringify(tooLong(30_000)) })).toBe(
      "Invalid configuration:\n  PROVIDERS.providers.openai.firstByteTimeoutMs: must not exceed the provider's timeoutMs (20000)",
    );
    expect(failure({ ...keys, PROVIDERS: JSON.stringify(tooLong(50)) })).toContain(
      'PROVIDERS.providers.openai.firstByteTimeoutMs: Too small',
    );
    expect(failure({ ...keys, PROVIDERS: JSON.stringify(tooLong('5s')) })).toContain(
      'PROVIDERS.providers.openai.firstByteTimeoutMs: Invalid input',
    );
  });

  it('bounds a whole route past each entry’s own deadline, so an entry’s deadline always ends its call first', () => {
    const config = load({ ...keys, PROVIDERS: JSON.stringify(gateway) }).providers;
    // claude and ollama at PROVIDER_TIMEOUT_MS (120 s), openai at 20 s, each with a second's slack.
    expect(routeTimeoutMs(config, 'text')).toBe(120_000 + 20_000 + 120_000 + 3 * 1000);
    expect(routeTimeoutMs(config, 'image')).toBe(20_000 + 1000);
  });

  it('keeps the slashes of a model id after the provider (OpenRouter)', () => {
    const openRouter = {
      providers: {
        openrouter: { type: 'openai', baseUrl: 'https://openrouter.ai/api/v1', apiKeyEnv: 'OR_KEY' },
      },
      routes: {
        text: ['openrouter/anthropic/claude-sonnet-4', 'openrouter/meta-llama/llama-3.1-70b-instruct'],
      },
    };
    const { routes } = load({
      OR_KEY: 'sk-or-000000000004',
      PROVIDERS: JSON.stringify(openRouter),
    }).providers;
    expect(routes.text.map((e) => e.model)).toEqual([
      'anthropic/claude-sonnet-4',
      'meta-llama/llama-3.1-70b-instruct',
    ]);
  });

  it('reads the document from a file named by @path', () => {
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'providers-')), 'providers.json');
    writeFileSync(file, JSON.stringify(gateway));
    expect(load({ ...keys, PROVIDERS: `@${file}` }).providers.routes.text).toHaveLength(3);
    expect(failure({ PROVIDERS: `@${file}.missing` })).toContain(
      `PROVIDERS: cannot read ${file}.missing: ENOENT`,
    );
  });

  it('names every bad field at once', () => {
    const bad = {
      providers: {
        openai: { type: 'openai', apiKeyEnv: 'UNSET_KEY' },
        claude: { type: 'anthropic' },
        odd: { type: 'gemini' },
      },
      routes: { text: ['nobody/model-x'], image: ['claude/claude-sonnet-4-5'], embedding: ['no-slash'] },
      prices: { 'openai/unused': { imagePerImage: 1 } },
    };
    // Shape errors first: the references are checked once the shape is right.
    expect(failure({ PROVIDERS: JSON.stringify(bad) })).toBe(
      [
        'Invalid configuration:',
        '  PROVIDERS.providers.odd.type: Invalid option: expected one of "local"|"openai"|"anthropic"',
        '  PROVIDERS.routes.embedding[0]: an entry is "<provider>/<model>"',
      ].join('\n'),
    );
    const { odd: _odd, ...providers } = bad.providers;
    const message = failure({
      PROVIDERS: JSON.stringify({ ...bad, providers, routes: { ...bad.routes, embedding: undefined } }),
    });
    expect(message.split('\n').slice(1)).toEqual([
      '  PROVIDERS.providers.openai.apiKeyEnv: the environment variable UNSET_KEY is not set',
      '  PROVIDERS.providers.claude.apiKeyEnv: the Anthropic API needs a key: name its variable',
      '  PROVIDERS.routes.text[0]: no provider named nobody in PROVIDERS.providers',
      '  PROVIDERS.routes.image[0]: a provider of type anthropic does not serve image',
      '  PROVIDERS.prices.openai/unused: prices a provider/model no route uses',
    ]);
  });

  it('refuses what is not the document', () => {
    expect(failure({ PROVIDERS: '{"providers": ' })).toBe(
      'Invalid configuration:\n  PROVIDERS: is not valid JSON',
    );
    expect(failure({ PROVIDERS: JSON.stringify({ ...gateway, route: {} }) })).toContain(
      'PROVIDERS: Unrecognized key: "route"',
    );
    expect(failure({ PROVIDERS: JSON.stringify({ providers: {}, routes: {} }) })).toContain(
      'PROVIDERS.providers: name at least one provider',
    );
    expect(failure({ ...keys, PROVIDERS: JSON.stringify({ ...gateway, routes: { text: [] } }) })).toContain(
      'PROVIDERS.routes.text',
    );
    // Headers the SDK would add to every provider's requests are refused, not passed on unseen.
    expect(failure({ OPENAI_CUSTOM_HEADERS: 'X-Team: billing' })).toBe(
      'Invalid configuration:\n  OPENAI_CUSTOM_HEADERS: not supported: the OpenAI SDK would send these headers to every OpenAI-compatible provider; unset it',
    );
    expect(failure({ ANTHROPIC_CUSTOM_HEADERS: 'X-Team: billing' })).toContain(
      'ANTHROPIC_CUSTOM_HEADERS: not supported: the Anthropic SDK would send',
    );
    // A bad variable elsewhere is reported first: the routes are read once the rest is valid.
    expect(failure({ PORT: 'x', PROVIDERS: '[' })).toMatch(/^Invalid configuration:\n {2}PORT: /);
  });
});
