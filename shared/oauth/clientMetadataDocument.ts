import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

import { BlockedTargetError, guardedLookup, isPublicAddress } from '../webhooks/ssrf.ts';
import { type DynamicClient, parseDynamicClient } from './dynamicRegistration.ts';

/** How a metadata document is fetched; tests allow loopback (and plain http on it). */
export type MetadataFetchOptions = {
  allowPrivate: boolean;
  allowHttp: boolean;
  timeoutMs: number;
  maxBytes: number;
};

export const defaultMetadataFetch: MetadataFetchOptions = {
  allowPrivate: false,
  allowHttp: false,
  timeoutMs: 5_000,
  maxBytes: 5 * 1024,
};

/** The longest client_id URL taken: the token endpoint looks no longer one up, and each is a cache key. */
export const maxClientIdUrlLength = 2048;

/** Is this client_id a metadata document URL (rather than a registered svc_oc_ id)? */
export const isMetadataClientId = (clientId: string) => /^https?:\/\//.test(clientId);

/** Why the URL cannot be a client_id, or null (draft-ietf-oauth-client-id-metadata-document §3). */
export function clientIdUrlProblem(raw: string, options: MetadataFetchOptions): string | null {
  if (raw.length > maxClientIdUrlLength) return `must not be longer than ${maxClientIdUrlLength} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && !(options.allowHttp && url.protocol === 'http:')) return 'must use https';
  if (url.username || url.password) return 'must not carry credentials';
  if (url.hash || raw.includes('#')) return 'must not have a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'must have a path';
  if (/\/\.\.?(\/|$)/.test(url.pathname)) return 'must not have dot segments';
  return null;
}

function fetchBounded(url: URL, options: MetadataFetchOptions): Promise<string> {
  const client = url.protocol === 'https:' ? https : http;
  // An address literal is connected to without any lookup: check it here.
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(literal) && !options.allowPrivate && !isPublicAddress(literal)) {
    return Promise.reject(new BlockedTargetError(url.hostname));
  }
  return new Promise((resolve, reject) => {
    const req = client.get(
      url,
      {
        agent: false,
        // Resolved and checked once; the socket connects to exactly that address (no rebinding).
        lookup: guardedLookup(options.allowPrivate) as never,
        headers: { accept: 'application/json', 'user-agent': 'svc-platform-oauth' },
        timeout: options.timeoutMs,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          return reject(new Error(`answered HTTP ${res.statusCode}`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            // Settled first: what arrived so far is never parsed.
            reject(new Error(`is larger than ${options.maxBytes} bytes`));
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      },
    );
    // One deadline for the whole exchange, not only socket idleness.
    const deadline = setTimeout(
      () => req.destroy(new Error(`took longer than ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.on('close', () => clearTimeout(deadline));
    req.on('timeout', () => req.destroy(new Error(`took longer than ${options.timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** The lookup failures of a name that does not resolve (getaddrinfo's, and guardedLookup's empty answer). */
const unresolved = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA', 'EAI_FAIL']);

/**
 * Why a fetch failed, for an anonymous visitor of /oauth/authorize: a host that resolves to a private
 * address and one that does not resolve at all get the same words, and no address is named, so the
 * page cannot be used to learn which internal names exist or where they point. Other network errors
 * say only their code (their messages carry the address connected to).
 */
function whyNotFetched(error: unknown): string {
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown };
  if (code === 'webhook_target_blocked' || (typeof code === 'string' && unresolved.has(code))) {
    return 'its host has no public address (private, loopback and reserved addresses are refused)';
  }
  if (typeof syscall === 'string' && typeof code === 'string') return `the connection failed (${code})`;
  return `it ${(error as Error).message}`;
}

/**
 * Fetches and checks a Client ID Metadata Document: its client_id must be the URL it was fetched
 * from; the rest is read as a dynamic registration (public client, redirect URIs, scopes).
 * @throws Error with a reason fit for the error page.
 */
export async function fetchClientMetadataDocument(
  clientId: string,
  available: readonly string[],
  sensitive: readonly string[],
  options: MetadataFetchOptions,
): Promise<DynamicClient> {
  const problem = clientIdUrlProblem(clientId, options);
  if (problem) throw new Error(`The client_id URL ${problem}.`);
  let text: string;
  try {
    text = await fetchBounded(new URL(clientId), options);
  } catch (error) {
    throw new Error(`The client metadata document could not be fetched: ${whyNotFetched(error)}.`, {
      cause: error,
    });
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error('The client metadata document is not JSON.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new Error('The client metadata document is not a JSON object.');
  }
  const doc = body as Record<string, unknown>;
  if (doc.client_id !== clientId) throw new Error('The client metadata document names another client_id.');
  try {
    return parseDynamicClient(doc, available, sensitive);
  } catch (error) {
    throw new Error(`The client metadata document is not acceptable: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
