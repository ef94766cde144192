import type { Config } from '../../shared/config/config.ts';
import { fixtureProviders } from '../../shared/providers/fixtures.ts';
import type { Providers } from '../../shared/providers/types.ts';
import { makeLiveProviders } from './live.ts';

const liveCache = new WeakMap<Config, Providers>();

/** Test keys always get the fixtures; live keys the configured provider (`local` by default). */
export function selectProviders(config: Config, livemode: boolean): Providers {
  if (!livemode) return fixtureProviders;
  let live = liveCache.get(config);
  if (!live) {
    live = makeLiveProviders(config);
    liveCache.set(config, live);
  }
  return live;
}
