import { readFileSync } from 'node:fs';

import { z } from 'zod';

import { localModels } from './localModels.ts';
import { type Prices, priceTable } from './prices.ts';
import { type BalanceStrategy, groupMembers, routeEntry, routeItem } from './routeGroups.ts';

/** The capabilities a route can be configured for (OCR and video are always local). */
export const routedCapabilities = ['text', 'image', 'embedding', 'transcription'] as const;
export type RoutedCapability = (typeof routedCapabilities)[number];

export const providerTypes = ['local', 'openai', 'anthropic'] as const;
export type ProviderType = (typeof providerTypes)[number];

/** What each protocol can serve: the Anthropic Messages API generates text only. */
const servesCapability: Record<ProviderType, readonly RoutedCapability[]> = {
  local: routedCapabilities,
  openai: routedCapabilities,
  anthropic: ['text'],
};

const defaultBaseUrl: Record<ProviderType, string | undefined> = {
  local: undefined,
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com',
};

export type ProviderSpec = Readonly<{
  name: string;
  type: ProviderType;
  /** Without a trailing slash; undefined for `local`. */
  baseUrl: string | undefined;
  /** The secret read from `apiKeyEnv` at start-up. */
  apiKey: string | undefined;
  /** The deadline over a whole call: an answer still flowing then ends there (the caller's length). */
  timeoutMs: number;
  /**
   * The longest a streamed answer may wait for its first byte, or stay silent mid-answer, before the
   * call fails as the provider's fault (counted against its circuit). At most `timeoutMs`, its default.
   */
  firstByteTimeoutMs: number;
  /** When its circuit opens: `failures` in a row within `windowMs`; skipped for `cooldownMs` then. */
  breaker: Readonly<{ failures: number; windowMs: number; cooldownMs: number }>;
  /**
   * The upstream account's own requests and tokens per minute (null: none known): once the fleet has
   * spent either this minute, calls go to the next member or entry instead of earning a 429.
   */
  budget: Readonly<{ rpm: number | null; tpm: number | null }>;
}>;

/**
 * The route entry (PROVIDERS) that answered a live call: the gateway names it, and billing prices the
 * call at it. Test-key fixtures have none.
 */
export type Answerer = { provider: string; model: string };

/** One entry of a route: a provider and the model asked of it, with the prices it is billed at. */
export type RouteEntry = Readonly<{ provider: string; model: string; prices: Prices }>;

/** Route entries that share one place in a route, each call going to the member its strategy picks. */
export type RouteGroup = Readonly<{
  strategy: BalanceStrategy;
  members: readonly RouteEntry[];
  /** Each member's weight, in the members' order (1 each unless the strategy is `weighted`). */
  weights: readonly number[];
}>;

/** One place in a route as the gateway walks it: an entry, or a group sharing load. */
export type RouteStep = RouteEntry | RouteGroup;

export function isRouteGroup(step: RouteStep): step is RouteGroup {
  return 'members' in step;
}

/** A route by name: its entries (a group's members in its place) and its steps, as `routes` and `steps` hold them. */
export type NamedRoute = Readonly<{ entries: readonly RouteEntry[]; steps: readonly RouteStep[] }>;

export type ProvidersConfig = Readonly<{
  providers: Readonly<Record<string, ProviderSpec>>;
  /**
   * Every entry of each capability's route in order, a group's members in its place: what prices,
   * clients and deadlines are read from.
   */
  routes: Readonly<Record<RoutedCapability, readonly RouteEntry[]>>;
  /** Each capability's route as the gateway walks it, in order, falling back from step to step. */
  steps: Readonly<Record<RoutedCapability, readonly RouteStep[]>>;
  /**
   * Named routes besides each capability's default (PROVIDERS `aliases`), which a compatible API's
   * `model` may ask for by name (`"fast"`, `"gpt-4o-mini"`): see shared/config/modelRoutes.ts.
   */
  aliases: Readonly<Record<RoutedCapability, Readonly<Record<string, NamedRoute>>>>;
  /**
   * Whether live videos render locally with ffmpeg: always under PROVIDERS; under PROVIDER only when
   * it is `local` (the OpenAI protocol has no video endpoint, and that setting asked for no local work).
   */
  localVideo: boolean;
  /** Set by PROVIDERS: answers then name the provider with the model (`anthropic/claude-sonnet-4-5`). */
  named: boolean;
}>;

/** Whether every entry of a capability's route is the offline `local` provider (no model at all). */
export function routesOnlyLocal(config: ProvidersConfig, capability: RoutedCapability): boolean {
  return config.routes[capability].every((entry) => config.providers[entry.provider]?.type === 'local');
}

// Per entry, past its own deadline: the entry's deadline must end its call before a bound over the
// whole route does, since only the entry's tells an answer still flowing (billed as it stands) from
// a cancellation.
const entrySlackMs = 1000;

/**
 * The longest a call through a capability's whole route may take: each entry's timeout in turn (a
 * group's members too, since a call may try each of them once), with a second's slack each, so that
 * this bound, used over a whole call, never cuts an entry's answer first.
 */
export function routeTimeoutMs(config: ProvidersConfig, capability: RoutedCapability): number {
  return config.routes[capability].reduce(
    (ms, e) => ms + (config.providers[e.provider]?.timeoutMs ?? 0) + entrySlackMs,
    0,
  );
}

const providerName = z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, {
  message: 'a provider name is 1–40 of a-z, 0-9, _ and -, starting with a letter or digit',
});

const providerSchema = z
  .object({
    type: z.enum(providerTypes),
    baseUrl: z.string().url().optional(),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { message: 'must be the name of an environment variable' })
      .optional(),
    timeoutMs: z.number().int().min(100).max(600_000).optional(),
    firstByteTimeoutMs: z.number().int().min(100).max(600_000).optional(),
    rpm: z.number().int().min(1).max(100_000_000).optional(),
    tpm: z.number().int().min(1).max(100_000_000_000).optional(),
    breaker: z
      .object({
        failures: z.number().int().min(1).max(1000).default(5),
        windowSeconds: z.number().min(1).max(86_400).default(60),
        cooldownSeconds: z.number().min(1).max(86_400).default(30),
      })
      .strict()
      .default({ failures: 5, windowSeconds: 60, cooldownSeconds: 30 }),
  })
  .strict();

const defaultBreaker = Object.freeze({ failures: 5, windowMs: 60_000, cooldownMs: 30_000 });
const noBudget = Object.freeze({ rpm: null, tpm: null });

// An alias is what a compatible API's `model` says: no slash (those name one provider/model pair),
// and never `default` (the capability's own route). Checked per name so each bad one is named.
const aliasPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

function aliasNameProblem(name: string): string | undefined {
  if (name === 'default') return '"default" names the capability\'s route already';
  if (!aliasPattern.test(name)) {
    return 'an alias is 1–64 of A-Z, a-z, 0-9, ., _, : and -, starting with a letter or digit';
  }
  return undefined;
}

const routeSchema = z.array(routeItem).min(1).max(10);

const documentSchema = z
  .object({
    providers: z.record(providerName, providerSchema).refine((p) => Object.keys(p).length > 0, {
      message: 'name at least one provider',
    }),
    routes: z.partialRecord(z.enum(routedCapabilities), routeSchema),
    aliases: z
      .partialRecord(
        z.enum(routedCapabilities),
        z.record(z.string(), routeSchema).superRefine((aliases, ctx) => {
          const names = Object.keys(aliases);
          if (names.length > 50) {
            ctx.addIssue({ code: 'custom', message: 'at most 50 aliases per capability' });
          }
          for (const name of names) {
            const problem = aliasNameProblem(name);
            if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
          }
        }),
      )
      .default({}),
    prices: z.record(routeEntry, priceTable.partial()).default({}),
  })
  .strict();

/** The one-provider case PROVIDER / OPENAI_* describe, for when PROVIDERS is unset. */
export type SingleProviderSettings = {
  name: 'local' | 'openai';
  openai: { baseUrl: string; apiKey: string | undefined; models: Record<RoutedCapability, string> };
  timeoutMs: number;
};

/**
 * The gateway's providers and routes: the PROVIDERS document (JSON, or `@path` to a file holding it)
 * when set, otherwise the single provider PROVIDER / OPENAI_* name. Prices per route entry are the
 * base table (defaults and PRICES) with the document's entry for that provider/model laid over it.
 * @throws Error listing each bad field by its path (`PROVIDERS.routes.text[1]: …`).
 */
export function parseProvidersConfig(
  providersEnv: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  single: SingleProviderSettings,
  basePrices: Prices,
): ProvidersConfig {
  if (providersEnv === undefined || providersEnv.trim() === '') return singleProvider(single, basePrices);
  const document = readDocument(providersEnv);
  const parsed = documentSchema.safeParse(document);
  if (!parsed.success) throw invalid(parsed.error.issues.map((i) => [i.path, i.message]));
  const problems: [PropertyKey[], string][] = [];
  const providers: Record<string, ProviderSpec> = {};
  for (const [name, p] of Object.entries(parsed.data.providers)) {
    const apiKey = p.apiKeyEnv === undefined ? undefined : env[p.apiKeyEnv];
    if (p.apiKeyEnv !== undefined && (apiKey === undefined || apiKey === '')) {
      problems.push([['providers', name, 'apiKeyEnv'], `the environment variable ${p.apiKeyEnv} is not set`]);
    }
    if (p.type === 'anthropic' && p.apiKeyEnv === undefined) {
      problems.push([['providers', name, 'apiKeyEnv'], 'the Anthropic API needs a key: name its variable']);
    }
    const baseUrl = (p.baseUrl ?? defaultBaseUrl[p.type])?.replace(/\/+$/, '');
    const timeoutMs = p.timeoutMs ?? single.timeoutMs;
    if (p.firstByteTimeoutMs !== undefined && p.firstByteTimeoutMs > timeoutMs) {
      problems.push([
        ['providers', name, 'firstByteTimeoutMs'],
        `must not exceed the provider's timeoutMs (${timeoutMs})`,
      ]);
    }
    providers[name] = Object.freeze({
      name,
      type: p.type,
      baseUrl,
      apiKey,
      timeoutMs,
      firstByteTimeoutMs: p.firstByteTimeoutMs ?? timeoutMs,
      breaker: Object.freeze({
        failures: p.breaker.failures,
        windowMs: p.breaker.windowSeconds * 1000,
        cooldownMs: p.breaker.cooldownSeconds * 1000,
      }),
      budget: Object.freeze({ rpm: p.rpm ?? null, tpm: p.tpm ?? null }),
    });
  }
  const routes = {} as Record<RoutedCapability, RouteEntry[]>;
  const steps = {} as Record<RoutedCapability, RouteStep[]>;
  const aliases = {} as Record<RoutedCapability, Record<string, NamedRoute>>;
  const aliasEntries: RouteEntry[] = [];
  for (const capability of routedCapabilities) {
    routes[capability] = [];
    const entryAt = (entry: string, path: PropertyKey[]): RouteEntry => {
      const slash = entry.indexOf('/');
      const provider = entry.slice(0, slash);
      const spec = providers[provider];
      if (spec === undefined) {
        problems.push([path, `no provider named ${provider} in PROVIDERS.providers`]);
      } else if (!servesCapability[spec.type].includes(capability)) {
        problems.push([path, `a provider of type ${spec.type} does not serve ${capability}`]);
      }
      const prices = { ...basePrices, ...parsed.data.prices[entry] };
      const built = Object.freeze({ provider, model: entry.slice(slash + 1), prices: Object.freeze(prices) });
      routes[capability].push(built);
      return built;
    };
    const stepsOf = (items: z.infer<typeof routeSchema>, at: PropertyKey[]) =>
      items.map((item, i): RouteStep => {
        if (typeof item === 'string') return entryAt(item, [...at, i]);
        const members = groupMembers(item);
        return Object.freeze({
          strategy: item.strategy,
          members: Object.freeze(members.map((m, j) => entryAt(m.entry, [...at, i, 'members', j]))),
          weights: Object.freeze(members.map((m) => m.weight)),
        });
      });
    steps[capability] = stepsOf(parsed.data.routes[capability] ?? [], ['routes', capability]);
    aliases[capability] = {};
    for (const [name, items] of Object.entries(parsed.data.aliases[capability] ?? {})) {
      const first = routes[capability].length;
      const aliasSteps = stepsOf(items, ['aliases', capability, name]);
      // entryAt collected the alias's entries after the route's: they are the alias's own.
      const entries = routes[capability].splice(first);
      aliasEntries.push(...entries);
      aliases[capability][name] = Object.freeze({
        entries: Object.freeze(entries),
        steps: Object.freeze(aliasSteps),
      });
    }
  }
  for (const entry of Object.keys(parsed.data.prices)) {
    const used = [...Object.values(routes).flat(), ...aliasEntries];
    if (!used.some((e) => `${e.provider}/${e.model}` === entry)) {
      problems.push([['prices', entry], 'prices a provider/model no route uses']);
    }
  }
  if (problems.length > 0) throw invalid(problems);
  return Object.freeze({
    providers: Object.freeze(providers),
    routes: Object.freeze(routes),
    steps: Object.freeze(steps),
    aliases: Object.freeze(
      Object.fromEntries(routedCapabilities.map((c) => [c, Object.freeze(aliases[c])])),
    ) as ProvidersConfig['aliases'],
    localVideo: true,
    named: true,
  });
}

function singleProvider(single: SingleProviderSettings, basePrices: Prices): ProvidersConfig {
  const spec: ProviderSpec =
    single.name === 'local'
      ? {
          name: 'local',
          type: 'local',
          baseUrl: undefined,
          apiKey: undefined,
          timeoutMs: single.timeoutMs,
          firstByteTimeoutMs: single.timeoutMs,
          breaker: defaultBreaker,
          budget: noBudget,
        }
      : {
          name: 'openai',
          type: 'openai',
          baseUrl: single.openai.baseUrl.replace(/\/+$/, ''),
          apiKey: single.openai.apiKey,
          timeoutMs: single.timeoutMs,
          firstByteTimeoutMs: single.timeoutMs,
          breaker: defaultBreaker,
          budget: noBudget,
        };
  const models = single.name === 'local' ? localModels : single.openai.models;
  const routes = Object.fromEntries(
    routedCapabilities.map((c) => [
      c,
      [Object.freeze({ provider: spec.name, model: models[c], prices: basePrices })],
    ]),
  ) as Record<RoutedCapability, RouteEntry[]>;
  return Object.freeze({
    providers: Object.freeze({ [spec.name]: Object.freeze(spec) }),
    routes: Object.freeze(routes),
    steps: Object.freeze(routes),
    aliases: Object.freeze(
      Object.fromEntries(routedCapabilities.map((c) => [c, Object.freeze({})])),
    ) as ProvidersConfig['aliases'],
    localVideo: single.name === 'local',
    named: false,
  });
}

function readDocument(value: string): unknown {
  let text = value;
  if (value.startsWith('@')) {
    try {
      text = readFileSync(value.slice(1), 'utf8');
    } catch (error) {
      throw invalid([
        [[], `cannot read ${value.slice(1)}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`],
      ]);
    }
  }
  try {
    return JSON.parse(text);
  } catch {
    throw invalid([[[], 'is not valid JSON']]);
  }
}

function invalid(problems: [readonly PropertyKey[], string][]): Error {
  const field = (path: readonly PropertyKey[]) =>
    path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : `${s}.${String(p)}`), 'PROVIDERS');
  return new Error(
    `Invalid configuration:\n${problems.map(([path, m]) => `  ${field(path)}: ${m}`).join('\n')}`,
  );
}
