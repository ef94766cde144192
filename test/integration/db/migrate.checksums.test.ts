import { cp, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';

import { migrate, MigrationChangedError, readMigrationFiles } from '../../../db/migrate.ts';
import { createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';

const databases: string[] = [];
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-migrations-'));
});
afterAll(async () => {
  for (const name of databases) await dropTestDatabase(name);
  await rm(scratch, { recursive: true, force: true });
});

/** A copy of db/migrations to change, as a later checkout of the code would have it. */
async function migrationsCopy(): Promise<string> {
  const dir = await mkdtemp(path.join(scratch, 'm-'));
  await cp(path.join(import.meta.dirname, '../../../db/migrations'), dir, { recursive: true });
  return dir;
}

/** A database migrated with today's files (the template every test database is cloned from). */
async function migratedDatabase(): Promise<string> {
  const db = await createTestDatabase();
  databases.push(db.name);
  return db.url;
}

async function query<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

const recorded = (url: string) =>
  query<{ version: string; checksum: string | null }>(
    url,
    'select version, checksum from schema_migrations order by version',
  );

describe('migrations are immutable once applied', () => {
  it('records a sha256 per applied migration', async () => {
    const url = await migratedDatabase();
    const files = await readMigrationFiles();
    expect(await recorded(url)).toEqual(files.map((f) => ({ version: f.version, checksum: f.checksum })));
    expect(files[0]!.checksum).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses to go on, naming the file, when an applied migration changed', async () => {
    const url = await migratedDatabase();
    const dir = await migrationsCopy();
    const [first] = await readMigrationFiles(dir);
    await writeFile(path.join(dir, first!.file), `${first!.text}\n-- an innocent-looking edit\n`);
    // A new migration beside it must not be applied either: the release stops before anything.
    await writeFile(path.join(dir, '000999_later.sql'), 'create table later_things (id text primary key);');
    const attempt = migrate(url, () => {}, { migrationsDir: dir });
    await expect(attempt).rejects.toThrow(MigrationChangedError);
    await expect(attempt).rejects.toThrow(`db/migrations/${first!.file} changed after it was applied`);
    expect((await recorded(url)).map((r) => r.version)).not.toContain('000999');
    expect(await query(url, "select to_regclass('public.later_things') as t")).toEqual([{ t: null }]);
  });

  it('treats a CRLF checkout of the same text as unchanged, and applies what is new', async () => {
    const url = await migratedDatabase();
    const dir = await migrationsCopy();
    for (const file of await readMigrationFiles(dir)) {
      await writeFile(path.join(dir, file.file), file.text.replace(/\n/g, '\r\n'));
    }
    await writeFile(path.join(dir, '000999_later.sql'), 'create table later_things (id text primary key);');
    const log: string[] = [];
    await migrate(url, (line) => log.push(line), { migrationsDir: dir });
    expect(log).toEqual(['applied 000999_later.sql']);
    expect((await recorded(url)).at(-1)).toEqual({
      version: '000999',
      checksum: (await readMigrationFiles(dir)).at(-1)!.checksum,
    });
  });

  it('refuses to go on when an applied migration is missing', async () => {
    const url = await migratedDatabase();
    const dir = await migrationsCopy();
    const last = (await readMigrationFiles(dir)).at(-1)!;
    await unlink(path.join(dir, last.file));
    await expect(migrate(url, () => {}, { migrationsDir: dir })).rejects.toThrow(
      `migration ${last.version} is applied to this database but db/migrations has no ${last.version}_*.sql`,
    );
  });

  it('backfills checksums of a database migrated before they were recorded, then checks them', async () => {
    const url = await migratedDatabase();
    await query(url, 'alter table schema_migrations drop column checksum');
    await migrate(url);
    const files = await readMigrationFiles();
    expect(await recorded(url)).toEqual(files.map((f) => ({ version: f.version, checksum: f.checksum })));
    // From now on a change is caught.
    const dir = await migrationsCopy();
    await writeFile(path.join(dir, files[1]!.file), 'select 1;');
    await expect(migrate(url, () => {}, { migrationsDir: dir })).rejects.toThrow(files[1]!.file);
  });
});
