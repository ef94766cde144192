import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { runAdmin } from '../../cli/runAdmin.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type CliResult = { code: number; stdout: unknown; stderr: unknown };

type Options = {
  /** As operators run it: `npm run --silent admin -- <args>`, a process of its own. */
  viaNpm?: boolean;
  /** `node cli/admin.ts <args>`, a process of its own (without npm's start-up). */
  process?: boolean;
};

/**
 * The arguments of `command` (`'staff create'`) with `flags` as the CLI reads them, in the order given:
 * `--name value`, `--name` alone for `true`, nothing for `undefined`.
 */
export function cliArgs(command: string, flags: Record<string, string | true | undefined>): string[] {
  const args = command.split(' ');
  for (const [name, value] of Object.entries(flags)) {
    if (value === true) args.push(`--${name}`);
    else if (value !== undefined) args.push(`--${name}`, value);
  }
  return args;
}

function parse(text: string): unknown {
  const trimmed = text.trim();
  return trimmed === '' ? null : JSON.parse(trimmed);
}

function result(code: number, stdout: string, stderr: string): CliResult {
  try {
    return { code, stdout: parse(stdout), stderr: parse(stderr) };
  } catch {
    throw new Error(`CLI printed something other than JSON:\n${stdout}\n${stderr}`);
  }
}

/**
 * The operator CLI with `args`, configured by the test process's environment, LOG_LEVEL=silent and
 * `env` over them. By default in this process (runAdmin, the CLI's whole body: a process start costs a
 * second or more); `viaNpm` or `process` runs it as a process of its own, as operators do.
 */
export async function admin(
  args: string[],
  env: Record<string, string>,
  options: Options = {},
): Promise<CliResult> {
  const fullEnv = { ...process.env, LOG_LEVEL: 'silent', ...env };
  if (options.viaNpm || options.process) return spawned(args, fullEnv, options.viaNpm === true);
  const stdout: string[] = [];
  const stderr: string[] = [];
  let code: number;
  try {
    code = await runAdmin(args, fullEnv, {
      stdout: (text) => stdout.push(text),
      stderr: (text) => stderr.push(text),
    });
  } catch (error) {
    // The process would have died with this stack trace on its stderr.
    throw new Error(`CLI printed something other than JSON:\n${stdout.join('')}\n${(error as Error).stack}`, {
      cause: error,
    });
  }
  return result(code, stdout.join(''), stderr.join(''));
}

function spawned(args: string[], env: NodeJS.ProcessEnv, viaNpm: boolean): Promise<CliResult> {
  const [file, argv] = viaNpm
    ? ['npm', ['run', '--silent', 'admin', '--', ...args]]
    : [process.execPath, [path.join(root, 'cli/admin.ts'), ...args]];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { cwd: root, env }, (error, stdout, stderr) => {
      try {
        resolve(result(error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr));
      } catch (failure) {
        reject(failure as Error);
      }
    });
  });
}
