import { parseArgs } from 'node:util';

import { UniqueIntegrityConstraintViolationError } from 'slonik';

import { migrate } from '../db/migrate.ts';
import { loadConfig } from '../shared/config.ts';
import { makePool } from '../shared/db/pool.ts';
import { resolveServices } from '../shared/platform/services.ts';
import { CliError } from './cliError.ts';
import { brainCommands } from './commands/brain.ts';
import { coreCommands } from './commands/core.ts';
import { oauthAppCommands } from './commands/oauthApps.ts';
import { staffCommands } from './commands/staff.ts';
import { webhookCommands } from './commands/webhooks.ts';
import { workflowCommands } from './commands/workflows.ts';
import type { CommandTable } from './commandTable.ts';

/** Every operator command (DESIGN.md "Operator CLI"): other capabilities add their groups here. */
export const commands: CommandTable = {
  ...coreCommands,
  ...staffCommands,
  ...workflowCommands,
  ...webhookCommands,
  ...brainCommands,
  ...oauthAppCommands,
};

function fail(code: string, message: string): never {
  process.stderr.write(`${JSON.stringify({ error: { code, message } })}\n`);
  process.exit(1);
}

/** `npm run --silent admin -- <noun> <verb> [flags]`: one JSON object on stdout, or a JSON error on stderr. */
async function main(argv: string[]): Promise<void> {
  const name = argv.slice(0, 2).join(' ');
  const command = commands[name];
  if (!command) {
    fail('unknown_command', `unknown command '${name}'; commands: ${Object.keys(commands).join(', ')}`);
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(Object.entries(command.flags).map(([flag, type]) => [flag, { type }]));
    values = parseArgs({ args: argv.slice(2), options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    fail('invalid_arguments', (error as Error).message);
  }
  const config = loadConfig();
  const services = await resolveServices(config, { needS3: false });
  const pool = await makePool(services.databaseUrl, { maxPoolSize: 2, name: 'cli' });
  let exitCode = 0;
  try {
    await migrate(services.databaseUrl);
    const output = await command.run(pool, values);
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
