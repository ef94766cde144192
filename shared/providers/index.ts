import type { Config } from '../config.ts';
import { fixtureProviders } from './fixtures.ts';
import { makeLiveProviders } from './live.ts';
import type { Providers } from './types.ts';

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
