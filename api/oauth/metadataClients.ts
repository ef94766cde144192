import type { DatabasePool } from 'slonik';

import { type OauthAppRow, upsertMetadataApp } from '../../shared/db/queries/oauthApps.ts';
import { newId } from '../../shared/ids.ts';
import {
  defaultMetadataFetch,
  fetchClientMetadataDocument,
  type MetadataFetchOptions,
} from '../../shared/oauth/clientMetadataDocument.ts';
import type { ApiDocument } from '../openapi/document.ts';

// A document is fetched again after this long; failures are remembered briefly, so a client_id
// that does not answer cannot make every authorization request wait for it.
const freshMs = 5 * 60_000;
const failureMs = 30_000;
const maxEntries = 1_000;

type Entry = { until: number; app?: OauthAppRow; error?: string };

/** Client ID Metadata Document apps of this process: fetched on first use, cached, kept as rows. */
export class MetadataClients {
  private readonly cache = new Map<string, Entry>();
  private readonly sensitive: string[];
  private readonly pool: DatabasePool;
  private readonly doc: ApiDocument;
  private readonly options: MetadataFetchOptions;

  constructor(pool: DatabasePool, doc: ApiDocument, options: Partial<MetadataFetchOptions> = {}) {
    this.pool = pool;
    this.doc = doc;
    this.options = { ...defaultMetadataFetch, ...options };
    this.sensitive = doc.operations.flatMap((o) => (o.sensitive && o.scope ? [o.scope] : []));
  }

  /** The app behind a URL client_id, or the reason it cannot be used. */
  async resolve(clientId: string): Promise<{ app: OauthAppRow } | { error: string }> {
    const cached = this.cache.get(clientId);
    if (cached && cached.until > Date.now())
      {return cached.app ? { app: cached.app } : { error: cached.error! };}
    if (this.cache.size >= maxEntries) this.cache.clear();
    try {
      const client = await fetchClientMetadataDocument(
        clientId,
        this.doc.scopes,
        this.sensitive,
        this.options,
      );
      const app = await upsertMetadataApp(this.pool, { id: newId('app'), clientId, ...client });
      this.cache.set(clientId, { until: Date.now() + freshMs, app });
      return { app };
    } catch (error) {
      const message = (error as Error).message;
      this.cache.set(clientId, { until: Date.now() + failureMs, error: message });
      return { error: message };
    }
  }
}
