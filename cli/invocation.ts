import { parseArgs } from 'node:util';

import type { Command, CommandTable } from './commandTable.ts';
import { commandHelp, commandList, missingFlags } from './help.ts';

type Values = Record<string, string | boolean | undefined>;

/** What the arguments ask for, decided before any configuration or database is touched. */
export type Invocation =
  | { kind: 'help'; help: Record<string, unknown> }
  | { kind: 'error'; code: 'unknown_command' | 'invalid_arguments'; message: string }
  | { kind: 'run'; command: Command; values: Values };

// `--help` anywhere before a `--` terminator asks for help instead of running anything.
const asksForHelp = (args: string[]) => {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

/** `<noun> <verb> [flags]` → help to print, an argument error, or a command with its parsed flags. */
export function readInvocation(table: CommandTable, argv: string[]): Invocation {
  const help = asksForHelp(argv);
  if (help && (argv[0] === undefined || argv[0].startsWith('-'))) {
    return { kind: 'help', help: commandList(table) };
  }
  const name = argv.slice(0, 2).join(' ');
  const command = table[name];
  if (!command) {
    // `<noun> --help`: that noun's commands.
    const [noun, verb] = argv;
    const known = Object.keys(table).some((n) => n.startsWith(`${noun} `));
    if (help && known && (verb === undefined || verb.startsWith('-'))) {
      return { kind: 'help', help: commandList(table, noun) };
    }
    return {
      kind: 'error',
      code: 'unknown_command',
      message: `unknown command '${name}'; commands: ${Object.keys(table).join(', ')} (--help describes them)`,
    };
  }
  if (help) return { kind: 'help', help: commandHelp(name, command) };
  return readFlags(command, argv.slice(2));
}

function readFlags(command: Command, args: string[]): Invocation {
  let values: Values;
  try {
    const options = Object.fromEntries(
      Object.entries(command.flags).map(([flag, spec]) => [flag, { type: spec.type }]),
    );
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    return { kind: 'error', code: 'invalid_arguments', message: (error as Error).message };
  }
  const missing = missingFlags(command, values);
  if (missing.length === 0) return { kind: 'run', command, values };
  return {
    kind: 'error',
    code: 'invalid_arguments',
    message:
      missing.length === 1
        ? `${missing[0]} is required`
        : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)} are required`,
  };
}
