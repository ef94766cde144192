import type { Command, CommandTable } from './commandTable.ts';

const invocation = 'npm run --silent admin --';

/** `--name N [--credits MINOR] [--live]`: required flags bare, optional ones in brackets. */
export function usageOf(name: string, command: Command): string {
  const parts = Object.entries(command.flags).map(([flag, spec]) => {
    const text = spec.type === 'boolean' ? `--${flag}` : `--${flag} ${spec.value ?? 'VALUE'}`;
    return spec.required ? text : `[${text}]`;
  });
  return [name, ...parts].join(' ');
}

/** `<noun> <verb> --help`: the command's flags with their meaning and whether each is required. */
export function commandHelp(name: string, command: Command): Record<string, unknown> {
  return {
    command: name,
    summary: command.summary,
    usage: `${invocation} ${usageOf(name, command)}`,
    flags: Object.entries(command.flags).map(([flag, spec]) => ({
      flag: `--${flag}`,
      ...(spec.type === 'string' ? { value: spec.value ?? 'VALUE' } : {}),
      required: spec.required === true,
      description: spec.description,
    })),
  };
}

/** `--help` (or `<noun> --help`): the commands, each with its usage line. */
export function commandList(table: CommandTable, noun?: string): Record<string, unknown> {
  return {
    usage: `${invocation} <noun> <verb> [flags]`,
    help: `${invocation} <noun> <verb> --help prints a command's flags`,
    commands: Object.entries(table)
      .filter(([name]) => noun === undefined || name.split(' ')[0] === noun)
      .map(([name, command]) => ({ command: name, summary: command.summary, usage: usageOf(name, command) })),
  };
}

/** Flags a command requires that `values` lacks (absent or empty), in the order they are declared. */
export function missingFlags(command: Command, values: Record<string, unknown>): string[] {
  return Object.entries(command.flags)
    .filter(([flag, spec]) => spec.required && (values[flag] === undefined || values[flag] === ''))
    .map(([flag]) => `--${flag}`);
}
