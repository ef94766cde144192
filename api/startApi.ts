import type http from 'node:http';

import type { Registry } from 'prom-client';

import type { Config } from '../shared/config/config.ts';
import type { Logger } from '../shared/observability/logger.ts';
import type { ObjectStoreConfig } from '../shared/storage/objectStore.ts';
import { makeApp } from './app.ts';
import { createApiServer } from './http/apiServer.ts';
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
  const server = createApiServer(makeApp(deps), config.requestTimeoutMs);
  answerClientErrors(server, logger);
  const connections = trackConnections(server);
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
