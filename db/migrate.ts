import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Logger, runMigrations } from 'graphile-worker';
import pg from 'pg';

const migrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

// Any fixed number works: it only has to be the same for every process that migrates this database.
const migrationLockId = 7_204_311;

/**
 * Applies our numbered migrations (each in its own transaction, under an advisory lock so several
 * release processes can race safely), then graphile-worker's schema.
 * @throws the database error of the first migration that fails; earlier ones stay applied.
 */
export async function migrate(
  connectionString: string,
  log: (line: string) => void = () => {},
): Promise<void> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [migrationLockId]);
    await client.query(
      'create table if not exists schema_migrations (version text primary key, applied_at timestamptz not null default now())',
    );
    const applied = new Set(
      (await client.query<{ version: string }>('select version from schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    const files = (await readdir(migrationsDir)).filter((f) => /^\d{6}_.+\.sql$/.test(f)).sort();
    for (const file of files) {
      const version = file.slice(0, 6);
      if (applied.has(version)) continue;
      const text = await readFile(path.join(migrationsDir, file), 'utf8');
      await client.query('begin');
      try {
        await client.query(text);
        await client.query('insert into schema_migrations (version) values ($1)', [version]);
        await client.query('commit');
        log(`applied ${file}`);
      } catch (error) {
        await client.query('rollback');
        throw error;
      }
    }
  } finally {
    // The lock also ends with the session, which client.end() closes next.
    await client.query('select pg_advisory_unlock($1)', [migrationLockId]).catch(() => {});
    await client.end();
  }
  // graphile-worker's own schema, quietly: its migration log lines are not ours to print.
  await runMigrations({ connectionString, logger: new Logger(() => () => {}) });
}
