import { type Clock, systemClock } from './clock.ts';

/**
 * A bounded least-recently-used cache with a time to live per entry. A Map keeps insertion order:
 * a hit is moved to the end, so the first key is always the one used longest ago, and an insert past
 * capacity evicts exactly that one (never the whole cache, which would let anyone who fills it make
 * every other entry miss at once).
 */
export class LruCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();
  private readonly maxEntries: number;
  private readonly clock: Clock;

  /** @throws RangeError when maxEntries is not a positive integer. */
  constructor(maxEntries: number, clock: Clock = systemClock) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, not ${maxEntries}`);
    }
    this.maxEntries = maxEntries;
    this.clock = clock;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The live value, marked most recently used; an expired entry is dropped and misses. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.until <= this.clock()) return undefined;
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores the value for ttlMs as the most recently used entry, evicting the least recently used past capacity. */
  set(key: K, value: V, ttlMs: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, until: this.clock() + ttlMs });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  /** Keys from least to most recently used (expired ones included until they are next read). */
  keys(): K[] {
    return [...this.entries.keys()];
  }
}
