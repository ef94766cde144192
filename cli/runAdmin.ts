import { UniqueIntegrityConstraintViolationError } from 'slonik';

import { pendingMigrations } from '../db/migrate.ts';
import { type Config, loadConfig } from '../shared/config/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { CliError } from './cliError.ts';
import { commands } from './commands/index.ts';
import type { Command } from './commandTable.ts';
import { readInvocation } from './invocation.ts';

/** Where the CLI's answers go: the process's stdout and stderr, or a caller's buffers. */
export type CliOutput = { stdout: (text: string) => void; stderr: (text: string) => void };

type Values = Record<string, string | boolean | undefined>;

const errorLine = (code: string, message: string) => `${JSON.stringify({ error: { code, message } })}\n`;

/**
 * The operator CLI without its process (`cli/admin.ts` is the process): one JSON object on stdout, or
 * a JSON error on stderr, and the exit code. Configuration comes from `env` alone, and everything
 * opened on the way (pool, embedded database) is closed before it resolves.
 */
export async function runAdmin(argv: string[], env: NodeJS.ProcessEnv, out: CliOutput): Promise<number> {
  const invocation = readInvocation(commands, argv);
  if (invocation.kind === 'help') {
    // Help is one JSON object on stdout like every other answer, indented because people read it.
    out.stdout(`${JSON.stringify(invocation.help, null, 2)}\n`);
    return 0;
  }
  if (invocation.kind === 'error') {
    out.stderr(errorLine(invocation.code, invocation.message));
    return 1;
  }
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    out.stderr(errorLine('invalid_configuration', (error as Error).message));
    return 1;
  }
  return runCommand(invocation.command, invocation.values, config, out);
}

async function runCommand(command: Command, values: Values, config: Config, out: CliOutput): Promise<number> {
  const services = await resolveServices(config, { needS3: false });
  try {
    const pool = await makePool(services.databaseUrl, {
      maxPoolSize: 2,
      name: 'cli',
      pooler: config.databasePooler,
    });
    // slonik announces a failed query on the pool, then throws it. Unheard, the announcement throws
    // instead: the same error in a process of its own, but a wrapper of it when the error was made in
    // another realm (jest's module sandbox), which would turn `conflict` into `internal_error`.
    pool.on('error', () => {});
    try {
      return await answer(services.databaseUrl, () => command.run(pool, values, config), out);
    } finally {
      await pool.end();
    }
  } finally {
    await services.stop();
  }
}

/** The command's output, or its failure as `{ error: { code, message } }`, once the schema is current. */
async function answer(
  databaseUrl: string,
  run: () => Promise<Record<string, unknown>>,
  out: CliOutput,
): Promise<number> {
  try {
    await requireMigratedSchema(databaseUrl);
    out.stdout(`${JSON.stringify(await run())}\n`);
    return 0;
  } catch (error) {
    out.stderr(errorLine(errorCode(error), error instanceof Error ? error.message : String(error)));
    return 1;
  }
}

const errorCode = (error: unknown) =>
  error instanceof CliError
    ? error.code
    : error instanceof UniqueIntegrityConstraintViolationError
      ? 'conflict'
      : 'internal_error';

/**
 * The CLI never migrates: the release (or `npm start`) does, once, for every process. A database
 * behind this code would fail commands halfway with confusing SQL errors, so say so first.
 */
async function requireMigratedSchema(databaseUrl: string): Promise<void> {
  const pending = await pendingMigrations(databaseUrl);
  if (pending.length === 0) return;
  throw new CliError(
    'database_not_migrated',
    `the database schema is behind this code (not applied: ${pending.join(', ')}); ` +
      'run the release (`npm run --silent release`) or `npm start` first',
  );
}
