import http from 'node:http';

import type { Registry } from 'prom-client';

import type { Config } from '../shared/config/config.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { ObjectStoreConfig } from '../shared/storage/objectStore.ts';
import { makeApp } from './app.ts';
import { answerClientErrors } from './http/clientError.ts';
import { trackConnections } from './http/connections.ts';
import { makeAppDeps } from './makeDeps.ts';

/** `metrics`: the process's registry, which a worker in the same process (npm start) adds to; none with METRICS=off. */
export type ApiHandle = {
  server: http.Server;
  port: number;
  metrics: Registry | undefined;
  stop(): Promise<void>;
};

/** Builds the app and listens on PORT; `stop` stops accepting, lets requests finish, then closes. */
export async function startApi(
  config: Config,
  services: { databaseUrl: string; directDatabaseUrl?: string; s3: ObjectStoreConfig },
  logger: Logger,
): Promise<ApiHandle> {
  const deps = await makeAppDeps(config, services, logger);
  const server = http.createServer(
    {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: Math.min(60_000, config.requestTimeoutMs),
      // Node checks the two timeouts on this interval (30 s by default): a fraction of the timeout.
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.requestTimeoutMs / 4)),
    },
    makeApp(deps),
  );
  answerClientErrors(server, logger);
  const connections = trackConnections(server);
  // Streams are held open up to 60 s; keep-alive must outlive a load balancer's idle timeout.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  return {
    server,
    port,
    metrics: deps.metrics,
    stop: async () => {
      // Streams end first (with `done`), so closing the server waits only for ordinary requests.
      deps.drain();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        connections.closeWhenIdle();
        // Open streams end by themselves within 60 s; do not wait longer than that.
        setTimeout(() => server.closeAllConnections(), 61_000).unref();
      });
      await deps.close();
    },
  };
}
