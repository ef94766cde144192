import { parseArgs } from 'node:util';

import { UniqueIntegrityConstraintViolationError } from 'slonik';

import { pendingMigrations } from '../db/migrate.ts';
import { type Config, loadConfig } from '../shared/config/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { CliError } from './cliError.ts';
import { brainCommands } from './commands/brain.ts';
import { coreCommands } from './commands/core.ts';
import { oauthAppCommands } from './commands/oauthApps.ts';
import { providerCommands } from './commands/providers.ts';
import { queueCommands } from './commands/queue.ts';
import { staffCommands } from './commands/staff.ts';
import { webhookCommands } from './commands/webhooks.ts';
import { workflowCommands } from './commands/workflows.ts';
import type { CommandTable } from './commandTable.ts';
import { commandHelp, commandList, missingFlags } from './help.ts';

/** Every operator command (DESIGN.md "Operator CLI"): other capabilities add their groups here. */
export const commands: CommandTable = {
  ...coreCommands,
  ...staffCommands,
  ...workflowCommands,
  ...webhookCommands,
  ...brainCommands,
  ...oauthAppCommands,
  ...queueCommands,
  ...providerCommands,
};

function fail(code: string, message: string): never {
  process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  process.exit(1);
}

/** Help is one JSON object on stdout like every other answer, indented because people read it. */
function printHelp(help: Record<string, unknown>): never {
  process.stdout.write(`${JSON.stringify(help, null, 2)}\n`);
  process.exit(0);
}

// `--help` anywhere before a `--` terminator asks for help instead of running anything.
const asksForHelp = (args: string[]) => {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

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

/** `npm run --silent admin -- <noun> <verb> [flags]`: one JSON object on stdout, or a JSON error on stderr. */
async function main(argv: string[]): Promise<void> {
  const help = asksForHelp(argv);
  if (help && (argv[0] === undefined || argv[0].startsWith('-'))) printHelp(commandList(commands));
  const name = argv.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command) {
    // `<noun> --help`: that noun's commands.
    const [noun, verb] = argv;
    const known = Object.keys(commands).some((n) => n.startsWith(`${noun} `));
    if (help && known && (verb === undefined || verb.startsWith('-'))) printHelp(commandList(commands, noun));
    fail(
      'unknown_command',
      `unknown command '${name}'; commands: ${Object.keys(commands).join(', ')} (--help describes them)`,
    );
  }
  if (help) printHelp(commandHelp(name, command));
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(
      Object.entries(command.flags).map(([flag, spec]) => [flag, { type: spec.type }]),
    );
    values = parseArgs({ args: argv.slice(2), options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    fail('invalid_arguments', (error as Error).message);
  }
  const missing = missingFlags(command, values);
  if (missing.length > 0) {
    fail(
      'invalid_arguments',
      missing.length === 1
        ? `${missing[0]} is required`
        : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)} are required`,
    );
  }
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    fail('invalid_configuration', (error as Error).message);
  }
  const services = await resolveServices(config, { needS3: false });
  let exitCode = 0;
  const pool = await makePool(services.databaseUrl, { maxPoolSize: 2, name: 'cli' });
  try {
    await requireMigratedSchema(services.databaseUrl);
    const output = await command.run(pool, values, config);
    process.stdout.write(`${JSON.stringify(output)}\n`);
  } catch (error) {
    exitCode = 1;
    const code =
      error instanceof CliError
        ? error.code
        : error instanceof UniqueIntegrityConstraintViolationError
          ? 'conflict'
          : 'internal_error';
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  } finally {
    await pool.end();
    await services.stop();
  }
  process.exit(exitCode);
}

if (import.meta.main) await main(process.argv.slice(2));
