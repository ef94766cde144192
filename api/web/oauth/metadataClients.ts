import {
  clientIdUrlProblem,
  defaultMetadataFetch,
  fetchClientMetadataDocument,
  type MetadataFetchOptions,
} from '../../../shared/oauth/clientMetadataDocument.ts';
import type { DynamicClient } from '../../../shared/oauth/dynamicRegistration.ts';
import { type Clock, systemClock } from '../../../shared/primitives/clock.ts';
import { LruCache } from '../../../shared/primitives/lruCache.ts';
import type { ApiDocument } from '../../openapi/document.ts';
import { AddressThrottle, anonymousWorkLimits } from './addressThrottle.ts';

// A document is fetched again after this long; failures are remembered briefly, so a client_id
// that does not answer cannot make every authorization request wait for it.
const freshMs = 5 * 60_000;
const failureMs = 30_000;
const maxEntries = 1_000;

type Entry = { client: DynamicClient } | { error: string };

export type Resolved =
  | { client: DynamicClient }
  | { error: string }
  /** This address fetched its hour's worth of documents; nothing was fetched. */
  | { retryAfterSeconds: number };

/**
 * Client ID Metadata Document apps of this process: fetched on first use and cached, never stored
 * here. The app's row is made with the first consent to it (issueCode), so an unauthenticated
 * visitor naming new URLs costs at most the address's fetch budget and no rows.
 */
export class MetadataClients {
  private readonly sensitive: string[];
  private readonly doc: ApiDocument;
  private readonly options: MetadataFetchOptions;
  private readonly cache: LruCache<string, Entry>;
  // The same per-address budget as dynamic registration, spent only on fetches (cache misses).
  private readonly throttle: AddressThrottle;

  constructor(doc: ApiDocument, options: Partial<MetadataFetchOptions> = {}, clock: Clock = systemClock) {
    this.doc = doc;
    this.options = { ...defaultMetadataFetch, ...options };
    this.sensitive = doc.operations.flatMap((o) => (o.sensitive && o.scope ? [o.scope] : []));
    this.cache = new LruCache(maxEntries, clock);
    this.throttle = new AddressThrottle(anonymousWorkLimits, clock);
  }

  /** The checked document behind a URL client_id, the reason it cannot be used, or a refusal to fetch. */
  async resolve(clientId: string, clientAddress: string): Promise<Resolved> {
    const cached = this.cache.get(clientId);
    if (cached) return cached;
    // A URL that cannot be a client_id is refused without a fetch, so without spending the budget.
    const problem = clientIdUrlProblem(clientId, this.options);
    if (problem) return { error: `The client_id URL ${problem}.` };
    const retryAfterSeconds = this.throttle.take(clientAddress);
    if (retryAfterSeconds !== null) return { retryAfterSeconds };
    let entry: Entry;
    try {
      const client = await fetchClientMetadataDocument(
        clientId,
        this.doc.scopes,
        this.sensitive,
        this.options,
      );
      entry = { client };
      this.cache.set(clientId, entry, freshMs);
    } catch (error) {
      entry = { error: (error as Error).message };
      this.cache.set(clientId, entry, failureMs);
    }
    return entry;
  }
}
