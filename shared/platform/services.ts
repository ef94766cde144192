import path from 'node:path';

import type { Config } from '../config/config.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../embedded/postgres.ts';
import { startEmbeddedS3 } from '../embedded/s3.ts';
import type { Logger } from '../observability/logger.ts';
import type { ObjectStoreConfig } from '../storage/objectStore.ts';

export type Services = {
  databaseUrl: string;
  /** For sessions of their own (LISTEN, graphile-worker, migrations): DATABASE_DIRECT_URL, else databaseUrl. */
  directDatabaseUrl: string;
  s3: ObjectStoreConfig;
  stop(): Promise<void>;
};

/** The embedded server's log lines as ours (component `postgres`), at a level from their severity. */
function postgresLog(logger: Logger): (line: string) => void {
  const log = logger.child({ component: 'postgres' });
  return (line) => {
    const severity = /\b(PANIC|FATAL|ERROR|WARNING):/.exec(line)?.[1];
    if (severity === 'PANIC' || severity === 'FATAL') log.error(line);
    else if (severity) log.warn(line);
    else log.info(line);
  };
}

/**
 * The stateful services: DATABASE_URL and S3_ENDPOINT when set, otherwise the embedded PostgreSQL
 * and S3 server with their data under DATA_DIR (DESIGN.md "Embedded defaults").
 * `needS3: false` skips S3 for processes that never touch it (the operator CLI, migrations).
 * With a `logger`, an embedded PostgreSQL's own log joins it; `stop` stops S3, then PostgreSQL.
 */
export async function resolveServices(
  config: Config,
  options: { needS3?: boolean; logger?: Logger } = {},
): Promise<Services> {
  const stops: (() => Promise<void>)[] = [];
  let databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) {
    const pg = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), {
      onLog: options.logger && postgresLog(options.logger),
    });
    stops.push(() => pg.stop());
    await ensureDatabase(pg.adminUrl, 'svc');
    databaseUrl = pg.urlFor('svc');
  }
  let endpoint = config.s3.endpoint ?? '';
  if (config.s3.endpoint === undefined && options.needS3 !== false) {
    const s3 = await startEmbeddedS3(path.join(config.dataDir, 's3'), config.s3.bucket);
    stops.push(() => s3.stop());
    endpoint = s3.endpoint;
    options.logger?.info({ endpoint }, 'embedded S3 server listening');
  }
  return {
    databaseUrl,
    directDatabaseUrl: config.databaseDirectUrl ?? databaseUrl,
    s3: { ...config.s3, endpoint },
    stop: async () => {
      // Shutting down: one service failing to stop must not keep the others running.
      for (const stop of stops.reverse()) {
        await stop().catch((error: unknown) =>
          options.logger?.warn({ err: error }, 'a service failed to stop'),
        );
      }
    },
  };
}
