import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

import { coerceError } from '../../shared/errors/appError.ts';
import { BlockedTargetError, guardedLookup, isPublicAddress } from '../../shared/webhooks/ssrf.ts';

export type SendOutcome = {
  /** A 2xx answer: delivered. */
  delivered: boolean;
  statusCode: number | null;
  /** The start of the answer's body (up to 512 bytes), for the console's delivery log. */
  responseExcerpt?: string | null;
  error: string | null;
  /** The target may never be reached (bad scheme, blocked address): retrying cannot help. */
  permanent: boolean;
  durationMs: number;
};

export type SendRequest = {
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
  allowPrivate: boolean;
  signal?: AbortSignal;
};

const userAgent = 'svc-platform-webhooks/1';
const excerptBytes = 512;
const excerptWaitMs = 1000;

/**
 * Connections kept open between deliveries, so an endpoint taking deliveries back to back pays its
 * TCP (and TLS) handshake once, not per delivery. Agents are kept apart by whether private addresses
 * are allowed: a host name is checked by the lookup when a connection opens, and a connection opened
 * where private targets were allowed must never serve a request where they are not.
 */
const agents = new Map<string, http.Agent>();

function agentFor(protocol: 'http:' | 'https:', allowPrivate: boolean): http.Agent {
  const key = `${protocol}${allowPrivate}`;
  let agent = agents.get(key);
  if (!agent) {
    const options = { keepAlive: true, maxFreeSockets: 64, timeout: 30_000, scheduling: 'lifo' as const };
    agent = protocol === 'https:' ? new https.Agent(options) : new http.Agent(options);
    agents.set(key, agent);
  }
  return agent;
}

function errorMessage(thrown: unknown): string {
  const { message, code } = (thrown ?? {}) as { message?: unknown; code?: unknown };
  if (typeof message === 'string' && message !== '') return message;
  return typeof code === 'string' ? code : 'request failed';
}

type Answer = { statusCode: number; excerpt: string };

function isStaleConnection(thrown: unknown): boolean {
  const { code, reusedSocket } = (thrown ?? {}) as { code?: unknown; reusedSocket?: unknown };
  return reusedSocket === true && code === 'ECONNRESET';
}

/** One POST of the webhook; a failure on a reused connection is marked `reusedSocket`. */
function post(url: URL, request: SendRequest, signal: AbortSignal): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const protocol = url.protocol as 'http:' | 'https:';
    const client = protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      {
        method: 'POST',
        agent: agentFor(protocol, request.allowPrivate),
        lookup: guardedLookup(request.allowPrivate) as never,
        signal,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(request.body)),
          'user-agent': userAgent,
          ...request.headers,
        },
      },
      (res) => {
        // Only the body's start is kept, and only briefly: a receiver trickling its answer does not
        // turn a status already received into a timeout.
        const chunks: Buffer[] = [];
        let size = 0;
        let done = false;
        // An answer read to its end leaves its connection to the agent for the next delivery.
        const finish = (ended: boolean) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve({
            statusCode: res.statusCode ?? 0,
            excerpt: Buffer.concat(chunks).subarray(0, excerptBytes).toString('utf8'),
          });
          if (!ended) res.destroy();
        };
        const timer = setTimeout(() => finish(false), excerptWaitMs);
        res.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          if (size >= excerptBytes) finish(false);
        });
        res.on('end', () => finish(true));
        res.on('error', () => finish(false));
      },
    );
    req.on('error', (error) => reject(Object.assign(error, { reusedSocket: req.reusedSocket })));
    req.end(request.body);
  });
}

/**
 * POSTs one webhook: no redirects followed (a 3xx is a failed attempt), a hard deadline covering
 * connect, send and response headers, the response body discarded (its connection kept for the next
 * delivery when the body ends soon; dropped when it is long or slow). Never throws: the outcome says
 * what happened so the caller can log it and schedule a retry.
 */
export async function sendWebhook(request: SendRequest): Promise<SendOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let url: URL;
  try {
    url = new URL(request.url);
  } catch {
    return {
      delivered: false,
      statusCode: null,
      error: 'invalid URL',
      permanent: true,
      durationMs: elapsed(),
    };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      delivered: false,
      statusCode: null,
      error: `unsupported scheme ${url.protocol}`,
      permanent: true,
      durationMs: elapsed(),
    };
  }
  // A literal address is never looked up, so it is checked here; host names are checked by the lookup.
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (net.isIP(host) !== 0 && !request.allowPrivate && !isPublicAddress(host)) {
    const error = new BlockedTargetError(host);
    return {
      delivered: false,
      statusCode: null,
      error: error.message,
      permanent: true,
      durationMs: elapsed(),
    };
  }
  const signals = [AbortSignal.timeout(request.timeoutMs), ...(request.signal ? [request.signal] : [])];
  try {
    const signal = AbortSignal.any(signals);
    // A kept connection the receiver closed as it was reused fails before anything was read:
    // Node's documented case for sending again, once, on a new connection.
    const { statusCode, excerpt } = await post(url, request, signal).catch((thrown: unknown) => {
      if (!isStaleConnection(thrown) || signal.aborted) throw thrown;
      return post(url, request, signal);
    });
    const delivered = statusCode >= 200 && statusCode < 300;
    return {
      delivered,
      statusCode,
      responseExcerpt: excerpt,
      error: delivered ? null : `HTTP ${statusCode}`,
      permanent: false,
      durationMs: elapsed(),
    };
  } catch (thrown) {
    // Classified by name and code, not instanceof: errors can come from another realm (vm contexts).
    const { name, code } = (thrown ?? {}) as { name?: unknown; code?: unknown };
    if (code === 'webhook_target_blocked') {
      return {
        delivered: false,
        statusCode: null,
        error: coerceError(thrown).message,
        permanent: true,
        durationMs: elapsed(),
      };
    }
    const aborted = name === 'AbortError' || name === 'TimeoutError';
    const stopping = request.signal?.aborted === true;
    return {
      delivered: false,
      statusCode: null,
      error: aborted
        ? stopping
          ? 'attempt interrupted'
          : `no answer within ${request.timeoutMs} ms`
        : errorMessage(thrown),
      permanent: false,
      durationMs: elapsed(),
    };
  }
}
