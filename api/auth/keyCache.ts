import type { DatabasePool } from 'slonik';

import { findKeyForAuth, type KeyAuthRow } from '../../shared/db/queries/apiKeys.ts';
import type { NotificationHub } from '../../shared/realtime/pubsub.ts';

// A safety net only: every change that matters is announced on `auth:changed` and clears the cache
// at once (migrations 000004, 000010); a lost notification is covered by the reconnect re-read.
const ttlMs = 30_000;
// Unknown keys are remembered briefly, so one fake key repeated costs one lookup; a key created
// meanwhile announces itself on `auth:changed` too, which forgets every unknown one.
const unknownTtlMs = 10_000;
const maxEntries = 10_000;

/** What the cache needs of a credential row: when it stopped or stops working. */
type CachedRow = { revoked_at: string | null; expires_at: string | null };
type Lookup<Row> = (pool: DatabasePool, secretHash: Buffer) => Promise<Row | null>;

/**
 * Caches key lookups by secret hash in the api process: the auth query is the costliest part of a
 * cheap request, and unknown keys would otherwise cost one query each. Revocation, expiry edits,
 * developer access, project and workspace changes and new keys all NOTIFY `auth:changed`, which
 * empties the cache in every api process; so does a hub reconnect, since notifications may have been
 * missed. Expiry is still compared with the clock per request.
 */
export class KeyCache<Row extends CachedRow = KeyAuthRow> {
  private readonly entries = new Map<string, { row: Row | null; at: number }>();
  private readonly inflight = new Map<string, Promise<Row | null>>();
  private readonly pool: DatabasePool;
  private readonly lookup: Lookup<Row>;
  private generation = 0;

  /** `lookup` defaults to the API key query; OAuth access tokens bring theirs (same invalidation). */
  constructor(pool: DatabasePool, hub: NotificationHub, lookup?: Lookup<Row>) {
    this.pool = pool;
    this.lookup = lookup ?? (findKeyForAuth as unknown as Lookup<Row>);
    hub.subscribe('auth:changed', () => this.clear());
    hub.onReconnect(() => this.clear());
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
    this.inflight.clear();
  }

  /** Is this a key the cache holds as existing, unrevoked and unexpired? Never queries. */
  knowsValid(secretHash: Buffer): boolean {
    const hit = this.fresh(secretHash.toString('base64'));
    return (
      hit?.row !== null &&
      hit?.row !== undefined &&
      hit.row.revoked_at === null &&
      (hit.row.expires_at === null || Date.parse(hit.row.expires_at) > Date.now())
    );
  }

  async find(secretHash: Buffer): Promise<Row | null> {
    const key = secretHash.toString('base64');
    const hit = this.fresh(key);
    if (hit) return hit.row;
    let pending = this.inflight.get(key);
    if (!pending) {
      const generation = this.generation;
      pending = this.lookup(this.pool, secretHash).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
      const row = await pending;
      // A change announced while the query ran may not be in its result: do not keep it.
      if (generation === this.generation) this.remember(key, row);
      return row;
    }
    return pending;
  }

  private fresh(key: string): { row: Row | null; at: number } | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    const ttl = hit.row === null ? unknownTtlMs : ttlMs;
    return Date.now() - hit.at < ttl ? hit : undefined;
  }

  private remember(key: string, row: Row | null): void {
    if (this.entries.size >= maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { row, at: Date.now() });
  }
}
