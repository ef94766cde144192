import path from 'node:path';

import type { Config } from '../config.ts';
import { ensureDatabase, startEmbeddedPostgres } from '../embedded/postgres.ts';
import { startEmbeddedS3 } from '../embedded/s3.ts';
import type { ObjectStoreConfig } from '../objectStore.ts';

export type Services = {
  databaseUrl: string;
  s3: ObjectStoreConfig;
  stop(): Promise<void>;
};

/**
 * The stateful services: DATABASE_URL and S3_ENDPOINT when set, otherwise the embedded PostgreSQL
 * and S3 server with their data under DATA_DIR (DESIGN.md "Embedded defaults").
 * `needS3: false` skips S3 for processes that never touch it (the operator CLI, migrations).
 */
export async function resolveServices(
  config: Config,
  options: { needS3?: boolean; onLog?: (line: string) => void } = {},
): Promise<Services> {
  const stops: (() => Promise<void>)[] = [];
  let databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) {
    const pg = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), { onLog: options.onLog });
    stops.push(() => pg.stop());
    await ensureDatabase(pg.adminUrl, 'svc');
    databaseUrl = pg.urlFor('svc');
  }
  let endpoint = config.s3.endpoint ?? '';
  if (config.s3.endpoint === undefined && options.needS3 !== false) {
    const s3 = await startEmbeddedS3(path.join(config.dataDir, 's3'), config.s3.bucket);
    stops.push(() => s3.stop());
    endpoint = s3.endpoint;
  }
  return {
    databaseUrl,
    s3: { ...config.s3, endpoint },
    stop: async () => {
      // Shutting down: one service failing to stop must not keep the others running.
      for (const stop of stops.reverse()) await stop().catch(() => {});
    },
  };
}
