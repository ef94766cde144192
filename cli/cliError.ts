/** An operator CLI failure: printed as `{ error: { code, message } }` on stderr with a non-zero exit. */
export class CliError extends Error {
  readonly code: string;
  constructor(
    code: 'invalid_arguments' | 'not_found' | 'conflict' | 'unknown_command' | 'database_not_migrated',
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
    this.code = code;
  }
}

export function requireFlag(values: Record<string, unknown>, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value.length === 0) {
    throw new CliError('invalid_arguments', `--${name} is required`);
  }
  return value;
}

export function integerFlag(values: Record<string, unknown>, name: string, min = 0): number | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (
    typeof value !== 'string' ||
    !/^-?\d+$/.test(value) ||
    !Number.isSafeInteger(Number(value)) ||
    Number(value) < min
  ) {
    throw new CliError('invalid_arguments', `--${name} must be an integer of at least ${min}`);
  }
  return Number(value);
}

export function listFlag(values: Record<string, unknown>, name: string): string[] | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    throw new CliError('invalid_arguments', `--${name} takes a comma-separated list`);
  }
  return value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
}
