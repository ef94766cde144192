import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { chown, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { freePort } from '../../shared/embedded/freePort.ts';
import { systemUserIds } from '../../shared/embedded/systemUser.ts';
import { type DebianPackage, ensureDebianPackages } from './debianPackages.ts';
import { projectRoot } from './processes.ts';

/** Where Debian's `pgbouncer` package puts the binary. */
export const pgbouncerBinary = '/usr/sbin/pgbouncer';
/** The configuration the tests run with, which docs/deployment.md documents. */
export const pgbouncerTemplate = path.join(projectRoot, 'docs', 'pgbouncer.ini');

/** Debian's `pgbouncer` package, which globalSetup installs when missing (ensureDebianPackages). */
export const pgbouncerPackage: DebianPackage = {
  name: 'pgbouncer',
  binary: pgbouncerBinary,
  skipVariable: 'SVC_TEST_PGBOUNCER_SKIP',
  tests: 'PgBouncer tests',
};

/** Installs Debian's pgbouncer package when missing (as globalSetup does for the test run). */
export const ensurePgbouncer = (): Promise<void> => ensureDebianPackages([pgbouncerPackage]);

/** Why PgBouncer tests cannot run here (apt-get unavailable), or undefined when they can. */
export function pgbouncerSkipReason(): string | undefined {
  return process.env[pgbouncerPackage.skipVariable];
}

export type Pgbouncer = {
  pid: number;
  /** `url` (a database on the PostgreSQL server behind it) as reached through PgBouncer. */
  urlFor(url: string): string;
  /** PgBouncer's own log so far. */
  log(): Promise<string>;
  stop(): Promise<void>;
};

/** A value as auth_file quotes it: in double quotes, a double quote doubled. */
const quoted = (value: string) => `"${value.replaceAll('"', '""')}"`;

/**
 * Starts PgBouncer with docs/pgbouncer.ini (transaction pooling, every other setting at its default)
 * on a free loopback port in front of `serverUrl`'s PostgreSQL, accepting that URL's user and
 * password. As root it runs as the `postgres` user (PgBouncer refuses root), which the package's
 * dependency postgresql-common creates.
 */
export async function startPgbouncer(serverUrl: string): Promise<Pgbouncer> {
  const server = new URL(serverUrl);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-pgbouncer-'));
  const port = await freePort();
  const values: Record<string, string> = {
    SERVER_HOST: server.hostname,
    SERVER_PORT: server.port || '5432',
    LISTEN_ADDR: '127.0.0.1',
    LISTEN_PORT: String(port),
    DIR: dir,
  };
  const template = await readFile(pgbouncerTemplate, 'utf8');
  const ini = template.replaceAll(/@([A-Z_]+)@/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`docs/pgbouncer.ini: no value for @${name}@`);
    return value;
  });
  const configFile = path.join(dir, 'pgbouncer.ini');
  await writeFile(configFile, ini);
  const user = decodeURIComponent(server.username);
  await writeFile(
    path.join(dir, 'userlist.txt'),
    `${quoted(user)} ${quoted(decodeURIComponent(server.password))}\n`,
  );
  const owner = process.getuid?.() === 0 ? await systemUserIds('postgres') : undefined;
  if (owner) {
    for (const entry of ['', ...(await readdir(dir))]) {
      await chown(path.join(dir, entry), owner.uid, owner.gid);
    }
  }
  const child = spawn(pgbouncerBinary, [configFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(owner ? { uid: owner.uid, gid: owner.gid } : {}),
  });
  await whenListening(child, port);
  const log = () => readFile(path.join(dir, 'pgbouncer.log'), 'utf8').catch(() => '');
  return {
    pid: child.pid!,
    urlFor: (url) => {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    log,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        // SIGTERM: PgBouncer's immediate shutdown (SIGINT would wait for every client to leave).
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Resolves once PgBouncer logs that it listens on `port`; rejects with its output if it exits first. */
async function whenListening(child: ChildProcess, port: number): Promise<void> {
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(new Error(`PgBouncer did not listen within 10 s:\n${output}`)),
      10_000,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes(`listening on 127.0.0.1:${port}`)) done();
    };
    const onExit = () => fail(new Error(`PgBouncer exited before listening:\n${output}`));
    const cleanUp = () => {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
    };
    const done = () => {
      cleanUp();
      resolve();
    };
    const fail = (error: Error) => {
      cleanUp();
      child.kill('SIGTERM');
      reject(error);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
  });
  // Drained from now on: a full pipe would stall PgBouncer's logging (the log file keeps it all).
  child.stdout!.resume();
  child.stderr!.resume();
}
