import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../shared/config/config.ts';
import { modelNames, modelRoute } from '../../shared/config/modelRoutes.ts';

const base = { DATABASE_URL: 'postgres://u:p@localhost:5432/db', OPENAI_KEY: 'sk-openai-0001' };
const providers = {
  openai: { type: 'openai', apiKeyEnv: 'OPENAI_KEY' },
  vllm: { type: 'openai', baseUrl: 'http://127.0.0.1:8000/v1' },
};
const load = (document: Record<string, unknown>) =>
  loadConfig({ ...base, PROVIDERS: JSON.stringify({ providers, ...document }) });
const failure = (document: Record<string, unknown>) => {
  try {
    load(document);
  } catch (error) {
    return (error as Error).message.split('\n').slice(1);
  }
  throw new Error('the configuration was accepted');
};

describe('PROVIDERS aliases: named routes for the compatible APIs', () => {
  const document = {
    routes: { text: ['openai/gpt-4o'], embedding: ['openai/text-embedding-3-small'] },
    aliases: {
      text: {
        fast: [{ strategy: 'least-busy', members: ['vllm/llama-3.1-8b', 'openai/gpt-4o-mini'] }],
        'gpt-4o-mini': ['openai/gpt-4o-mini'],
      },
    },
    prices: {
      'vllm/llama-3.1-8b': {
        textInputPer1MTokens: 0,
        textOutputPer1MTokens: 0,
        textCachedInputPer1MTokens: 0,
      },
    },
  };

  it('resolves default, an alias and a pair of either; nothing else', () => {
    const { providers: config } = load(document);
    expect(modelRoute(config, 'text', 'default')?.entries.map((e) => e.model)).toEqual(['gpt-4o']);
    expect(modelRoute(config, 'text', undefined)?.name).toBe('default');
    const fast = modelRoute(config, 'text', 'fast')!;
    expect(fast.entries.map((e) => `${e.provider}/${e.model}`)).toEqual([
      'vllm/llama-3.1-8b',
      'openai/gpt-4o-mini',
    ]);
    expect(fast.steps).toHaveLength(1);
    expect(modelRoute(config, 'text', 'vllm/llama-3.1-8b')?.entries).toEqual([fast.entries[0]]);
    expect(modelRoute(config, 'text', 'openai/gpt-4o')?.steps).toHaveLength(1);
    expect(modelRoute(config, 'text', 'gpt-4o')).toBeUndefined();
    expect(modelRoute(config, 'embedding', 'fast')).toBeUndefined();
    expect(modelRoute(config, 'image', 'default')?.entries).toEqual([]);
    // The capability's own route is unchanged by its aliases: native calls never take them.
    expect(config.routes.text.map((e) => e.model)).toEqual(['gpt-4o']);
    expect(modelNames(config, 'text')).toEqual([
      'default',
      'fast',
      'gpt-4o-mini',
      'openai/gpt-4o',
      'vllm/llama-3.1-8b',
      'openai/gpt-4o-mini',
    ]);
    expect(modelNames(config, 'image')).toEqual([]);
  });

  it("holds a call at the dearest price over the route and its aliases, and prices the alias's entries", () => {
    const config = load({
      ...document,
      prices: { ...document.prices, 'openai/gpt-4o-mini': { textOutputPer1MTokens: 9000 } },
    });
    expect(config.reservationPrices.text.textOutputPer1MTokens).toBe(9000);
    const vllm = modelRoute(config.providers, 'text', 'fast')!.entries[0]!;
    expect(vllm.prices.textOutputPer1MTokens).toBe(0);
  });

  it('names each bad field', () => {
    expect(
      failure({
        routes: { text: ['openai/gpt-4o'] },
        aliases: {
          text: { default: ['openai/gpt-4o'], 'a/b': ['openai/gpt-4o'], fast: ['vlm/llama'] },
          image: { big: [] },
        },
      }),
    ).toEqual([
      `  PROVIDERS.aliases.text.default: "default" names the capability's route already`,
      '  PROVIDERS.aliases.text.a/b: an alias is 1–64 of A-Z, a-z, 0-9, ., _, : and -, starting with a letter or digit',
      '  PROVIDERS.aliases.image.big: Too small: expected array to have >=1 items',
    ]);
    expect(
      failure({ routes: { text: ['openai/gpt-4o'] }, aliases: { text: { fast: ['vlm/llama'] } } }),
    ).toEqual(['  PROVIDERS.aliases.text.fast[0]: no provider named vlm in PROVIDERS.providers']);
    // An entry only an alias uses may be priced.
    expect(() =>
      load({
        routes: { text: ['openai/gpt-4o'] },
        ...{ aliases: document.aliases, prices: document.prices },
      }),
    ).not.toThrow();
  });
});
