import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { migrate } from '../../db/migrate.ts';
import { freePort } from '../../shared/embedded/freePort.ts';
import {
  type EmbeddedPostgresHandle,
  ensureDatabase,
  startEmbeddedPostgres,
} from '../../shared/embedded/postgres.ts';

export type RestartablePostgres = {
  /** The platform's database on this server, migrated. */
  url: string;
  /** Fast shutdown (open sessions are ended, as `pg_ctl restart -m fast` does), then up again on the same port. */
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
};

/**
 * A PostgreSQL server of a test file's own, which it may stop and start under load without
 * disturbing the server every other test file shares.
 */
export async function startRestartablePostgres(): Promise<RestartablePostgres> {
  const dataDir = path.join(await mkdtemp(path.join(os.tmpdir(), 'svc-restartable-')), 'postgres');
  const port = await freePort();
  let server: EmbeddedPostgresHandle | undefined = await startEmbeddedPostgres(dataDir, { fast: true, port });
  await ensureDatabase(server.adminUrl, 'svc');
  const url = server.urlFor('svc');
  await migrate(url);
  return {
    url,
    restart: async (downMs = 0) => {
      await server?.stop();
      server = undefined;
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      server = await startEmbeddedPostgres(dataDir, { fast: true, port });
    },
    stop: async () => {
      await server?.stop();
      server = undefined;
    },
  };
}
