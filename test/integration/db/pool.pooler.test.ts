import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { IdleTransactionTimeoutError, StatementTimeoutError } from 'slonik';
import { z } from 'zod';

import { type DatabasePooler, makePool } from '../../../shared/db/pool.ts';
import { leaseRateLimit, openRateLimitWindow } from '../../../shared/db/queries/rateLimits.ts';
import { type DatabasePool, sql } from '../../../shared/db/sql.ts';
import { admin } from '../../helpers/cli.ts';
import { adminQuery, createTestDatabase, dropTestDatabase } from '../../helpers/database.ts';
import { createTenant } from '../../helpers/fixtures.ts';
import { type Pgbouncer, pgbouncerSkipReason, startPgbouncer } from '../../helpers/pgbouncer.ts';

/**
 * DATABASE_URL's pools through Debian's PgBouncer in transaction mode with its default settings
 * (docs/pgbouncer.ini): what a session-mode pool sends is refused there, what DATABASE_POOLER=
 * transaction makes works, sends no statement names and still bounds its transactions.
 */
const skip = pgbouncerSkipReason();
let db: { name: string; url: string };
let bouncer: Pgbouncer;
const pools: DatabasePool[] = [];

beforeAll(async () => {
  if (skip) return;
  db = await createTestDatabase();
  bouncer = await startPgbouncer(db.url);
});
afterAll(async () => {
  for (const pool of pools) await pool.end();
  await bouncer?.stop();
  if (db) await dropTestDatabase(db.name);
});

/**
 * A pool ended with the file. Heard: slonik announces a failed statement on the pool before it
 * throws it, and an unheard announcement would throw a wrapper of it instead (see cli/runAdmin.ts).
 */
async function pool(url: string, pooler: DatabasePooler, options: Parameters<typeof makePool>[1] = {}) {
  const made = await makePool(url, { maxPoolSize: 4, ...options, pooler });
  made.on('error', () => {});
  pools.push(made);
  return made;
}

const text = z.object({ value: z.string() });
const backend = z.object({ pid: z.number(), value: z.string() });
const bounds = { statementTimeoutMs: 500, idleInTransactionTimeoutMs: 500 };
const currentMinute = () => new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();

(skip ? describe.skip : describe)('pools through PgBouncer in transaction mode, default settings', () => {
  it('refuses a session pool: its timeouts are startup parameters', async () => {
    await expect(pool(bouncer.urlFor(db.url), 'none')).rejects.toThrow(
      /unsupported startup parameter: statement_timeout/,
    );
  });

  it('runs the named hot statements of two pools at once, sharing server connections', async () => {
    const [a, b] = [
      await pool(bouncer.urlFor(db.url), 'transaction'),
      await pool(bouncer.urlFor(db.url), 'transaction'),
    ];
    const tenant = await createTenant(a, { rateLimitPerMinute: 1000 });
    const window = currentMinute();
    // Each pool prepares rate_limit_open and rate_limit_lease on whichever server connection it gets.
    const granted = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const p = i % 2 === 0 ? a : b;
        await openRateLimitWindow(p, tenant.workspaceId, window);
        return p.transaction((tx) => leaseRateLimit(tx, tenant.workspaceId, window, 1, 1000));
      }),
    );
    expect(granted.reduce((sum: number, g) => sum + (g?.granted ?? 0), 0)).toBe(40);
  });

  it("runs the operator CLI's commands through it, DATABASE_DIRECT_URL direct", async () => {
    const env = { DATABASE_URL: bouncer.urlFor(db.url), DATABASE_DIRECT_URL: db.url };
    const made = await admin(['workspace', 'create', '--name', 'Pooled', '--credits', '500'], env);
    expect(made).toMatchObject({ code: 0, stdout: { workspace: { name: 'Pooled' } } });
    const { workspace } = made.stdout as { workspace: { id: string } };
    expect(
      await admin(['credits', 'add', '--workspace', workspace.id, '--amount', '250'], env),
    ).toMatchObject({
      code: 0,
      stdout: { workspace: { id: workspace.id, balance: 750 } },
    });
  });

  it('bounds a statement inside a transaction', async () => {
    const p = await pool(bouncer.urlFor(db.url), 'transaction', { bounds });
    await expect(
      p.transaction((tx) => tx.query(sql.typeAlias('void')`select from pg_sleep(2)`)),
    ).rejects.toBeInstanceOf(StatementTimeoutError);
  });

  it('ends a transaction left idle, and the pool carries on', async () => {
    const p = await pool(bouncer.urlFor(db.url), 'transaction', { bounds });
    await expect(
      p.transaction(async (tx) => {
        await tx.query(sql.typeAlias('void')`select`);
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        await tx.query(sql.typeAlias('void')`select`);
      }),
    ).rejects.toBeInstanceOf(IdleTransactionTimeoutError);
    expect(await p.oneFirst(sql.type(z.object({ n: z.number() }))`select 1::int as n`)).toBe(1);
  });

  it("leaves no bound on the server connection after the transaction: the next client's session is untouched", async () => {
    const p = await pool(bouncer.urlFor(db.url), 'transaction', { maxPoolSize: 1, bounds });
    const inside = await p.transaction((tx) =>
      tx.one(
        sql.type(backend)`select pg_backend_pid() as pid, current_setting('statement_timeout') as value`,
      ),
    );
    const after = await p.one(
      sql.type(backend)`select pg_backend_pid() as pid, current_setting('statement_timeout') as value`,
    );
    expect(inside.value).toBe('500ms');
    // One client alone: PgBouncer hands it the server connection it used last.
    expect(after.pid).toBe(inside.pid);
    expect(after.value).toBe('0');
  });

  it("bounds statements outside a transaction by the role's setting for the database (docs/deployment.md)", async () => {
    // A database of its own: role settings apply when a server connection starts.
    const own = await createTestDatabase();
    try {
      const user = decodeURIComponent(new URL(own.url).username);
      await adminQuery(`alter role "${user}" in database ${own.name} set statement_timeout = '500ms'`);
      const p = await makePool(bouncer.urlFor(own.url), { maxPoolSize: 1, pooler: 'transaction' });
      p.on('error', () => {});
      try {
        expect(await p.oneFirst(sql.type(text)`select current_setting('statement_timeout') as value`)).toBe(
          '500ms',
        );
        await expect(p.query(sql.typeAlias('void')`select from pg_sleep(2)`)).rejects.toBeInstanceOf(
          StatementTimeoutError,
        );
        // Inside a transaction the pool's own bound (60 s by default) holds instead.
        expect(
          await p.transaction((tx) =>
            tx.oneFirst(sql.type(text)`select current_setting('statement_timeout') as value`),
          ),
        ).toBe('1min');
      } finally {
        await p.end();
      }
    } finally {
      await dropTestDatabase(own.name);
    }
  });
});

describe('statement names on one connection, PostgreSQL direct', () => {
  const preparedNames = (p: DatabasePool) =>
    p.anyFirst(sql.type(text)`select name as value from pg_prepared_statements order by name`);

  it.each([
    ['none', ['rate_limit_open']],
    ['transaction', []],
  ] as const)('DATABASE_POOLER=%s prepares %j', async (pooler, expected) => {
    const own = await createTestDatabase();
    try {
      const p = await makePool(own.url, { maxPoolSize: 1, pooler });
      try {
        const tenant = await createTenant(p);
        await openRateLimitWindow(p, tenant.workspaceId, currentMinute());
        expect(await preparedNames(p)).toEqual(expected);
      } finally {
        await p.end();
      }
    } finally {
      await dropTestDatabase(own.name);
    }
  });
});
