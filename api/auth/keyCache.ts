import type { DatabasePool } from 'slonik';

import { findKeyForAuth, type KeyAuthRow } from '../../shared/db/queries/apiKeys.ts';
import type { NotificationHub } from '../../shared/pubsub.ts';

// A safety net only: every change that matters is announced on `auth:changed` and clears the cache
// at once (see migration 000004); a lost notification is covered by the reconnect re-read.
const ttlMs = 30_000;
const maxEntries = 10_000;

/**
 * Caches key lookups by secret hash in the api process: the auth query is the costliest part of a
 * cheap request. Revocation, expiry edits, developer access, project and workspace changes all
 * NOTIFY `auth:changed`, which empties the cache in every api process; so does a hub reconnect,
 * since notifications may have been missed. Expiry is still compared with the clock per request.
 */
export class KeyCache {
  private readonly entries = new Map<string, { row: KeyAuthRow; at: number }>();
  private readonly inflight = new Map<string, Promise<KeyAuthRow | null>>();
  private readonly pool: DatabasePool;
  private generation = 0;

  constructor(pool: DatabasePool, hub: NotificationHub) {
    this.pool = pool;
    hub.subscribe('auth:changed', () => this.clear());
    hub.onReconnect(() => this.clear());
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
    this.inflight.clear();
  }

  async find(secretHash: Buffer): Promise<KeyAuthRow | null> {
    const key = secretHash.toString('base64');
    const hit = this.entries.get(key);
    if (hit && Date.now() - hit.at < ttlMs) return hit.row;
    let pending = this.inflight.get(key);
    if (!pending) {
      const generation = this.generation;
      pending = findKeyForAuth(this.pool, secretHash).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
      const row = await pending;
      // A change announced while the query ran may not be in its result: do not keep it.
      if (row && generation === this.generation) this.remember(key, row);
      return row;
    }
    return pending;
  }

  private remember(key: string, row: KeyAuthRow): void {
    if (this.entries.size >= maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { row, at: Date.now() });
  }
}
