import { readFileSync } from 'node:fs';
import path from 'node:path';

import { describe, expect, it } from '@jest/globals';

import { loadConfig } from '../../shared/config/config.ts';
import { defaultPrices } from '../../shared/config/prices.ts';

const base = {
  DATABASE_URL: 'postgres://u:p@localhost:5432/db',
  EAST_KEY: 'sk-east-0001',
  WEST_KEY: 'sk-west-0002',
};
const providers = {
  east: { type: 'openai', apiKeyEnv: 'EAST_KEY' },
  west: { type: 'openai', apiKeyEnv: 'WEST_KEY' },
  vllm: { type: 'openai', baseUrl: 'http://127.0.0.1:8000/v1' },
};
const load = (routes: unknown, prices: unknown = {}) =>
  loadConfig({ ...base, PROVIDERS: JSON.stringify({ providers, routes, prices }) }).providers;
const failure = (routes: unknown) => {
  try {
    load(routes);
  } catch (error) {
    return (error as Error).message.split('\n').slice(1);
  }
  throw new Error('the configuration was accepted');
};

describe('PROVIDERS: balanced groups in a route', () => {
  it('reads a group as one step, its members in the flat route where prices and clients are read', () => {
    const config = load(
      {
        text: [
          {
            strategy: 'weighted',
            members: [{ entry: 'east/gpt-4o', weight: 3 }, 'west/gpt-4o'],
          },
          'vllm/llama3.1:8b',
        ],
        embedding: [{ strategy: 'least-busy', members: ['east/embed', 'west/embed'] }],
      },
      { 'west/gpt-4o': { textOutputPer1MTokens: 1500 } },
    );
    const east = { provider: 'east', model: 'gpt-4o', prices: defaultPrices };
    const west = {
      provider: 'west',
      model: 'gpt-4o',
      prices: { ...defaultPrices, textOutputPer1MTokens: 1500 },
    };
    const vllm = { provider: 'vllm', model: 'llama3.1:8b', prices: defaultPrices };
    expect(config.steps.text).toEqual([
      { strategy: 'weighted', members: [east, west], weights: [3, 1] },
      vllm,
    ]);
    expect(config.routes.text).toEqual([east, west, vllm]);
    expect(config.steps.embedding).toEqual([
      {
        strategy: 'least-busy',
        members: [config.routes.embedding[0], config.routes.embedding[1]],
        weights: [1, 1],
      },
    ]);
  });

  it('keeps a plain list exactly as before: each entry its own step, in order', () => {
    const config = load({ text: ['east/a', 'west/b'] });
    expect(config.steps.text).toEqual(config.routes.text);
    expect(config.routes.text.map((e) => `${e.provider}/${e.model}`)).toEqual(['east/a', 'west/b']);
    // The one-provider case (PROVIDER, no PROVIDERS) walks its one entry too.
    const single = loadConfig(base).providers;
    expect(single.steps.text).toEqual(single.routes.text);
  });

  it('names each bad group field', () => {
    expect(
      failure({
        text: [
          { strategy: 'fastest', members: ['east/a'] },
          { strategy: 'weighted', members: [] },
          {
            strategy: 'weighted',
            members: [
              { entry: 'east/a', weight: 0 },
              { entry: 'west/a', weight: 'x' },
            ],
          },
          { strategy: 'latency', members: ['east/a', 'east/a', { entry: 'west/a', weight: 2 }] },
          { strategy: 'weighted', members: ['east/a'], weights: [1] },
          { members: ['no-slash', 7] },
          42,
        ],
      }),
    ).toEqual([
      `  PROVIDERS.routes.text[0].strategy: a group's strategy is one of weighted, least-busy, latency`,
      '  PROVIDERS.routes.text[1].members: a group needs at least one member',
      '  PROVIDERS.routes.text[2].members[0].weight: a weight is more than 0',
      '  PROVIDERS.routes.text[2].members[1].weight: a weight is a number',
      '  PROVIDERS.routes.text[3].members[1]: east/a is in this group twice',
      '  PROVIDERS.routes.text[3].members[2].weight: weights are read only by the weighted strategy, not latency',
      '  PROVIDERS.routes.text[4]: Unrecognized key: "weights"',
      `  PROVIDERS.routes.text[5].strategy: a group's strategy is one of weighted, least-busy, latency`,
      '  PROVIDERS.routes.text[5].members[0]: an entry is "<provider>/<model>"',
      '  PROVIDERS.routes.text[5].members[1]: is a member: "<provider>/<model>", or {"entry": "<provider>/<model>", "weight": n} in a weighted group',
      '  PROVIDERS.routes.text[6]: is an entry "<provider>/<model>", or a group {"strategy": …, "members": […]}',
    ]);
  });

  it('checks a member against the providers as it checks an entry', () => {
    expect(
      failure({
        text: ['east/a', { strategy: 'least-busy', members: ['west/a', 'nobody/a'] }],
        image: [{ strategy: 'weighted', members: [{ entry: 'east/img', weight: 1 }] }],
      }),
    ).toEqual(['  PROVIDERS.routes.text[1].members[1]: no provider named nobody in PROVIDERS.providers']);
    expect(() => load({ text: [{ strategy: 'latency', members: ['east/a'] }] }, { 'west/a': {} })).toThrow(
      'PROVIDERS.prices.west/a: prices a provider/model no route uses',
    );
  });

  it('loads the worked configuration docs/providers.md shows', () => {
    const docs = readFileSync(path.resolve(import.meta.dirname, '../../docs/providers.md'), 'utf8');
    const section = docs.slice(docs.indexOf('Worked configuration: two accounts of OpenAI'));
    const document = /```json\n([\s\S]*?)```/.exec(section)![1]!;
    const config = loadConfig({
      DATABASE_URL: base.DATABASE_URL,
      OPENAI_A_KEY: 'sk-a-0001',
      OPENAI_B_KEY: 'sk-b-0002',
      PROVIDERS: document,
    }).providers;
    expect(config.steps.text.map((step) => ('strategy' in step ? step.strategy : 'entry'))).toEqual([
      'weighted',
      'least-busy',
    ]);
    expect(config.steps.text[0]).toMatchObject({ weights: [3, 1] });
    expect(config.routes.text.map((e) => e.provider)).toEqual(['openai-a', 'openai-b', 'vllm-1', 'vllm-2']);
    expect(config.routes.text[2]!.prices.textOutputPer1MTokens).toBe(0);
    expect(config.steps.embedding[0]).toMatchObject({ strategy: 'latency' });
  });
});
