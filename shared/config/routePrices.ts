import { reachableEntries } from './modelRoutes.ts';
import { cachePrices, defaultPrices, type Prices } from './prices.ts';
import type { ProvidersConfig, RoutedCapability } from './providersConfig.ts';

type FixedKey = Exclude<keyof Prices, 'textCachedInputPer1MTokens' | 'textCacheWritePer1MTokens'>;
const fixedKeys = Object.keys(defaultPrices) as FixedKey[];

/**
 * What a call through a capability's route is reserved at: each price at its highest over the
 * route's entries and its aliases' (a compatible API's `model` may pick either), so whichever entry
 * answers, the reservation covers it. The base table when the route is empty (the call then fails
 * before it costs anything).
 */
export function reservationPrices(
  config: ProvidersConfig,
  capability: RoutedCapability,
  base: Prices,
): Prices {
  const route = reachableEntries(config, capability);
  if (route.length === 0) return base;
  const highest = { ...route[0]!.prices };
  for (const { prices } of route.slice(1)) {
    for (const key of fixedKeys) highest[key] = Math.max(highest[key], prices[key]);
  }
  // A cache price an entry leaves out is its input price; left out everywhere, it follows the
  // highest input price by itself.
  const resolved = route.map(({ prices }) => cachePrices(prices));
  if (route.some(({ prices }) => prices.textCachedInputPer1MTokens !== undefined)) {
    highest.textCachedInputPer1MTokens = Math.max(...resolved.map((p) => p.cachedInput));
  }
  if (route.some(({ prices }) => prices.textCacheWritePer1MTokens !== undefined)) {
    highest.textCacheWritePer1MTokens = Math.max(...resolved.map((p) => p.cacheWrite));
  }
  return highest;
}

/** The prices of the route entry that answered; the base table for calls no entry answered (fixtures). */
export function answeredPrices(
  config: ProvidersConfig,
  capability: RoutedCapability,
  answeredBy: { provider: string; model: string } | undefined,
  base: Prices,
): Prices {
  if (answeredBy === undefined) return base;
  const entry = reachableEntries(config, capability).find(
    (e) => e.provider === answeredBy.provider && e.model === answeredBy.model,
  );
  return entry?.prices ?? base;
}
