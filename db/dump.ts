import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { ensureDatabase, startEmbeddedPostgres } from '../shared/embedded/postgres.ts';
import { dumpSchema } from './dumpSchema.ts';
import { migrate } from './migrate.ts';

/** `npm run db:dump`: migrates a scratch database and writes its canonical schema to db/schema.sql. */
const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-dump-'));
const server = await startEmbeddedPostgres(path.join(scratch, 'postgres'), { fast: true });
try {
  await ensureDatabase(server.adminUrl, 'dump');
  await migrate(server.urlFor('dump'));
  const target = path.join(path.dirname(fileURLToPath(import.meta.url)), 'schema.sql');
  await writeFile(target, await dumpSchema(server.urlFor('dump')));
  process.stdout.write(`wrote ${target}\n`);
} finally {
  await server.stop();
  await rm(scratch, { recursive: true, force: true });
}
