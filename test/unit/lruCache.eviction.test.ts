import { describe, expect, it } from '@jest/globals';

import { LruCache } from '../../shared/primitives/lruCache.ts';

describe('LruCache', () => {
  it('evicts the least recently used entry, one at a time, never clearing the rest', () => {
    const cache = new LruCache<string, number>(3);
    cache.set('a', 1, 60_000);
    cache.set('b', 2, 60_000);
    cache.set('c', 3, 60_000);
    // Reading a makes b the one used longest ago.
    expect(cache.get('a')).toBe(1);
    cache.set('d', 4, 60_000);
    expect(cache.keys()).toEqual(['c', 'a', 'd']);
    expect(cache.get('b')).toBeUndefined();
    // Setting an existing key refreshes it rather than growing the cache.
    cache.set('c', 30, 60_000);
    cache.set('e', 5, 60_000);
    expect(cache.keys()).toEqual(['d', 'c', 'e']);
    expect(cache.size).toBe(3);
    expect([cache.get('c'), cache.get('d'), cache.get('e')]).toEqual([30, 4, 5]);
  });

  it('keeps every other entry when full: capacity + 1 distinct keys cost one eviction', () => {
    const cache = new LruCache<number, number>(1_000);
    for (let i = 0; i < 1_001; i++) cache.set(i, i, 60_000);
    expect(cache.size).toBe(1_000);
    expect(cache.get(0)).toBeUndefined();
    expect(cache.get(1)).toBe(1);
    expect(cache.get(1_000)).toBe(1_000);
  });

  it('misses and drops an entry once its time to live has passed', () => {
    let now = 1_000_000;
    const cache = new LruCache<string, string>(10, () => now);
    cache.set('short', 'x', 30_000);
    cache.set('long', 'y', 300_000);
    now += 29_999;
    expect(cache.get('short')).toBe('x');
    now += 1;
    expect(cache.get('short')).toBeUndefined();
    expect(cache.keys()).toEqual(['long']);
    expect(cache.get('long')).toBe('y');
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new LruCache(0)).toThrow(RangeError);
  });
});
