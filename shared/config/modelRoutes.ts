import type {
  NamedRoute,
  ProvidersConfig,
  RoutedCapability,
  RouteEntry,
  RouteStep,
} from './providersConfig.ts';

/** What a compatible API's `model` names when it says nothing else: the capability's own route. */
export const defaultModel = 'default';

/** A model name a caller may send, and the route it runs on. */
export type ModelRoute = NamedRoute & { name: string };

function pairOf(entry: RouteEntry): string {
  return `${entry.provider}/${entry.model}`;
}

/** Every entry a capability's calls can reach: its route's, then each alias's. */
export function reachableEntries(config: ProvidersConfig, capability: RoutedCapability): RouteEntry[] {
  return [
    ...config.routes[capability],
    ...Object.values(config.aliases[capability]).flatMap((route) => route.entries),
  ];
}

/**
 * The route a `model` names for a capability: `default` (or none) its own route, an alias of
 * PROVIDERS `aliases`, or one `<provider>/<model>` pair of either (that entry alone, no fallback).
 * Undefined for anything else (the compatible APIs answer model_not_found). The api resolves it to
 * refuse unknown names; the worker resolves the same name again from the same configuration.
 */
export function modelRoute(
  config: ProvidersConfig,
  capability: RoutedCapability,
  model: string | undefined,
): ModelRoute | undefined {
  if (model === undefined || model === defaultModel) {
    return { name: defaultModel, entries: config.routes[capability], steps: config.steps[capability] };
  }
  const alias = config.aliases[capability][model];
  if (alias) return { name: model, ...alias };
  const entry = reachableEntries(config, capability).find((e) => pairOf(e) === model);
  if (!entry) return undefined;
  const steps: RouteStep[] = [entry];
  return { name: model, entries: [entry], steps };
}

/**
 * The model names a capability answers to, in the order GET /models lists them: `default` when the
 * capability has a route, its aliases, then every distinct provider/model pair.
 */
export function modelNames(config: ProvidersConfig, capability: RoutedCapability): string[] {
  if (config.routes[capability].length === 0 && Object.keys(config.aliases[capability]).length === 0) {
    return [];
  }
  const pairs = [...new Set(reachableEntries(config, capability).map(pairOf))];
  return [
    ...(config.routes[capability].length > 0 ? [defaultModel] : []),
    ...Object.keys(config.aliases[capability]),
    ...pairs,
  ];
}
