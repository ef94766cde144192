import type { Prices } from './prices.ts';
import type { ProvidersConfig, RoutedCapability } from './providersConfig.ts';

/**
 * What a call through a capability's route is reserved at: each price at its highest over the
 * route's entries, so whichever entry answers, the reservation covers it. The base table when the
 * route is empty (the call then fails before it costs anything).
 */
export function reservationPrices(
  config: ProvidersConfig,
  capability: RoutedCapability,
  base: Prices,
): Prices {
  const route = config.routes[capability];
  if (route.length === 0) return base;
  const highest = { ...route[0]!.prices };
  for (const { prices } of route.slice(1)) {
    for (const key of Object.keys(highest) as (keyof Prices)[])
      {highest[key] = Math.max(highest[key], prices[key]);}
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
  const entry = config.routes[capability].find(
    (e) => e.provider === answeredBy.provider && e.model === answeredBy.model,
  );
  return entry?.prices ?? base;
}
