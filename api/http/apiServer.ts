import http from 'node:http';

import type { Express } from 'express';

import { bornOnAppPrototypes } from './bornOnAppPrototypes.ts';

/**
 * A web process's HTTP server for `app`, with the timeouts production runs on: a request (headers
 * and body) must arrive within `requestTimeoutMs` (its headers within at most 60 s), and an idle
 * kept-alive connection lasts 65 s. Streams are held open up to 60 s, and a load balancer's idle
 * timeout is commonly 60 s: a server that closed idle connections first (Node's default is 5 s) races
 * the next request sent on them, which its client then sees reset. Requests and responses are made
 * on the app's own prototypes (bornOnAppPrototypes).
 */
export function createApiServer(app: Express, requestTimeoutMs: number): http.Server {
  const server = http.createServer(
    {
      ...bornOnAppPrototypes(app),
      requestTimeout: requestTimeoutMs,
      headersTimeout: Math.min(60_000, requestTimeoutMs),
      // Node checks the two timeouts on this interval (30 s by default): a fraction of the timeout.
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(requestTimeoutMs / 4)),
    },
    app,
  );
  server.keepAliveTimeout = 65_000;
  return server;
}
