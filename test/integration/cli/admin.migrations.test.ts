import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { readMigrationFiles } from '../../../db/migrate.ts';
import { randomBase62 } from '../../../shared/primitives/ids.ts';
import { admin } from '../../helpers/cli.ts';
import { adminQuery, createTestDatabase, dropTestDatabase, urlFor } from '../../helpers/database.ts';

const databases: string[] = [];
let empty: string;

beforeAll(async () => {
  // A database as a fresh install has it before the first release: nothing in it.
  empty = `svc_test_${randomBase62(10).toLowerCase()}`;
  await adminQuery(`create database ${empty}`);
  databases.push(empty);
});
afterAll(async () => {
  for (const name of databases) await dropTestDatabase(name);
});

async function migrated(): Promise<string> {
  const db = await createTestDatabase();
  databases.push(db.name);
  return db.url;
}

const tableExists = async (database: string, table: string) => {
  const url = urlFor(database);
  const { rows } = await adminQuery<{ exists: boolean }>(
    `select exists (select from pg_database where datname = $1) as exists`,
    [database],
  );
  if (!rows[0]!.exists) return false;
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const res = await client.query<{ found: boolean }>('select to_regclass($1) is not null as found', [
      table,
    ]);
    return res.rows[0]!.found;
  } finally {
    await client.end();
  }
};

describe('the operator CLI and the schema', () => {
  it('refuses an unmigrated database with a clear error, and does not migrate it', async () => {
    const files = (await readMigrationFiles()).map((f) => f.file);
    // A process of its own: the exit code and stderr as operators (and release scripts) see them.
    const out = await admin(
      ['workspace', 'create', '--name', 'Acme'],
      { DATABASE_URL: urlFor(empty) },
      { process: true },
    );
    expect(out.code).toBe(1);
    expect(out.stdout).toBeNull();
    const { error } = out.stderr as { error: { code: string; message: string } };
    expect(error.code).toBe('database_not_migrated');
    expect(error.message).toContain('npm run --silent release');
    expect(error.message).toContain('npm start');
    for (const file of files) expect(error.message).toContain(file);
    // The CLI left the schema to the release: still no tables at all.
    expect(await tableExists(empty, 'public.schema_migrations')).toBe(false);
    expect(await tableExists(empty, 'public.workspaces')).toBe(false);
  });

  it('names the migrations a database that is behind the code still lacks', async () => {
    const url = await migrated();
    const latest = (await readMigrationFiles()).at(-1)!;
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('delete from schema_migrations where version = $1', [latest.version]);
    await client.end();
    const out = await admin(['workspace', 'create', '--name', 'Acme'], { DATABASE_URL: url });
    expect(out.code).toBe(1);
    expect(out.stderr).toEqual({
      error: {
        code: 'database_not_migrated',
        message: expect.stringContaining(`not applied: ${latest.file})`),
      },
    });
  });

  it('runs against a migrated database', async () => {
    const out = await admin(['workspace', 'create', '--name', 'Acme'], { DATABASE_URL: await migrated() });
    expect(out).toEqual({
      code: 0,
      stdout: { workspace: { id: expect.stringMatching(/^ws_/), name: 'Acme' } },
      stderr: null,
    });
  });
});
