import { createHash } from 'node:crypto';

import type { ProvidersConfig, RoutedCapability } from '../config/providersConfig.ts';

/** Bumped when what a key covers changes, so entries written under the old meaning are never read. */
const keyVersion = 1;

/** JSON with every object's keys sorted: two requests that differ only in key order are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The route a capability's calls take, as its provider/model entries: a changed route (another
 * model, another provider) must not be answered with what the old one said.
 */
export function routeIdentity(providers: ProvidersConfig, capability: RoutedCapability): string[] {
  return providers.routes[capability].map((entry) => `${entry.provider}/${entry.model}`);
}

/**
 * The cache key of a request: capability, mode, route and the canonical request, hashed. The
 * workspace is not in the hash but in the entry's primary key, so no lookup can reach another
 * workspace's entry whatever the hash.
 */
export function responseCacheKey(parts: {
  capability: RoutedCapability;
  livemode: boolean;
  route: string[];
  request: Record<string, unknown>;
}): string {
  const text = canonicalJson({ v: keyVersion, ...parts });
  return createHash('sha256').update(text).digest('hex');
}
