import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import pg from 'pg';

const defaultMigrationsDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');

// Any fixed number works: it only has to be the same for every process that migrates this database.
const migrationLockId = 7_204_311;

export type MigrationFile = { version: string; file: string; text: string; checksum: string };

/** A released migration whose file no longer matches what was applied, or is gone. */
export class MigrationChangedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationChangedError';
  }
}

/**
 * sha256 of a migration's text, line endings normalised: a checkout that turns LF into CRLF has not
 * changed the migration.
 */
export function migrationChecksum(text: string): string {
  return createHash('sha256').update(text.replace(/\r\n/g, '\n')).digest('hex');
}

/** The numbered migration files (`000001_name.sql`), in order. */
export async function readMigrationFiles(dir = defaultMigrationsDir): Promise<MigrationFile[]> {
  const names = (await readdir(dir)).filter((f) => /^\d{6}_.+\.sql$/.test(f)).sort();
  return Promise.all(
    names.map(async (file) => {
      const text = await readFile(path.join(dir, file), 'utf8');
      return { version: file.slice(0, 6), file, text, checksum: migrationChecksum(text) };
    }),
  );
}

type AppliedRow = { version: string; checksum: string | null };

/**
 * Released migrations are immutable: each applied version must still have its file, with the text
 * that was applied.
 * @throws MigrationChangedError naming the first file that changed or is missing.
 */
function verifyApplied(applied: AppliedRow[], files: MigrationFile[]): void {
  const byVersion = new Map(files.map((f) => [f.version, f]));
  for (const row of applied) {
    const file = byVersion.get(row.version);
    if (!file) {
      throw new MigrationChangedError(
        `migration ${row.version} is applied to this database but db/migrations has no ${row.version}_*.sql; ` +
          'released migrations are never removed: restore the file',
      );
    }
    if (row.checksum !== file.checksum) {
      throw new MigrationChangedError(
        `db/migrations/${file.file} changed after it was applied to this database (sha256 ${row.checksum} ` +
          `then, ${file.checksum} now); released migrations are immutable: restore it and put the change in a new migration`,
      );
    }
  }
}

/**
 * Applies our numbered migrations (each in its own transaction, under an advisory lock so several
 * release processes can race safely), then graphile-worker's schema. Every run first checks that the
 * migrations already applied are unchanged (sha256 per version in schema_migrations); a database
 * migrated before checksums were kept gets them from the current files once.
 * @throws MigrationChangedError when an applied migration's file changed or is missing (nothing is applied then).
 * @throws the database error of the first migration that fails; earlier ones stay applied.
 */
export async function migrate(
  connectionString: string,
  log: (line: string) => void = () => {},
  options: { migrationsDir?: string } = {},
): Promise<void> {
  const files = await readMigrationFiles(options.migrationsDir);
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [migrationLockId]);
    await client.query(
      'create table if not exists schema_migrations (version text primary key, applied_at timestamptz not null default now(), checksum text)',
    );
    // Databases migrated before checksums were recorded: add the column and take today's files as
    // what was applied (the first run with this code is the last one that can trust them blindly).
    await client.query('alter table schema_migrations add column if not exists checksum text');
    const unrecorded = await client.query<{ version: string }>(
      'select version from schema_migrations where checksum is null',
    );
    for (const { version } of unrecorded.rows) {
      const file = files.find((f) => f.version === version);
      if (!file) continue; // reported as missing by verifyApplied below
      await client.query('update schema_migrations set checksum = $2 where version = $1', [
        version,
        file.checksum,
      ]);
    }
    const applied = (
      await client.query<AppliedRow>('select version, checksum from schema_migrations order by version')
    ).rows;
    verifyApplied(applied, files);
    const done = new Set(applied.map((r) => r.version));
    for (const migration of files) {
      if (done.has(migration.version)) continue;
      await client.query('begin');
      try {
        await client.query(migration.text);
        await client.query('insert into schema_migrations (version, checksum) values ($1, $2)', [
          migration.version,
          migration.checksum,
        ]);
        await client.query('commit');
        log(`applied ${migration.file}`);
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
  // graphile-worker's own schema, quietly: its migration log lines are not ours to print. Loaded
  // here, not at the top: the operator CLI imports this module only to read pending migrations.
  const { Logger, runMigrations } = await import('graphile-worker');
  await runMigrations({ connectionString, logger: new Logger(() => () => {}) });
}

/**
 * The migration files not yet applied to the database (every one when it has no schema yet), for
 * processes that must not migrate themselves (the operator CLI). Read-only.
 */
export async function pendingMigrations(connectionString: string): Promise<string[]> {
  const files = await readMigrationFiles();
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const table = await client.query<{ exists: boolean }>(
      "select to_regclass('public.schema_migrations') is not null as exists",
    );
    if (!table.rows[0]!.exists) return files.map((f) => f.file);
    const applied = new Set(
      (await client.query<{ version: string }>('select version from schema_migrations')).rows.map(
        (r) => r.version,
      ),
    );
    return files.filter((f) => !applied.has(f.version)).map((f) => f.file);
  } finally {
    await client.end();
  }
}
