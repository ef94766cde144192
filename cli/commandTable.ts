import type { DatabasePool } from 'slonik';

import type { Config } from '../shared/config/config.ts';

/** One flag of a command: how it parses, and what `--help` says about it. */
export type Flag = {
  type: 'string' | 'boolean';
  /** What a string flag's value stands for in usage lines, e.g. `MINOR` in `--credits MINOR`. */
  value?: string;
  /** Checked before the database is reached: a missing (or empty) required flag is invalid_arguments. */
  required?: boolean;
  description: string;
};

/** A string flag the command cannot run without; `value` names its value in usage lines (`--name N`). */
export const requiredString = (value: string, description: string): Flag => ({
  type: 'string',
  value,
  required: true,
  description,
});

/** A string flag the command can do without. */
export const optionalString = (value: string, description: string): Flag => ({
  type: 'string',
  value,
  description,
});

export type Command = {
  /** One line for `--help`. */
  summary: string;
  flags: Record<string, Flag>;
  run: (
    pool: DatabasePool,
    values: Record<string, string | boolean | undefined>,
    /** The process's configuration (the CLI passes it; tests calling a command directly may not). */
    config?: Config,
  ) => Promise<Record<string, unknown>>;
};

/** `"<noun> <verb>"` → command. */
export type CommandTable = Record<string, Command>;
