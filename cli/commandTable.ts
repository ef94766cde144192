import type { DatabasePool } from 'slonik';

export type Command = {
  flags: Record<string, 'string' | 'boolean'>;
  run: (
    pool: DatabasePool,
    values: Record<string, string | boolean | undefined>,
  ) => Promise<Record<string, unknown>>;
};

/** `"<noun> <verb>"` → command. */
export type CommandTable = Record<string, Command>;
