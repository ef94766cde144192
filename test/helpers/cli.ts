import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type CliResult = { code: number; stdout: unknown; stderr: unknown };

function parse(text: string): unknown {
  const trimmed = text.trim();
  return trimmed === '' ? null : JSON.parse(trimmed);
}

/** Runs the operator CLI as operators do: `npm run --silent admin -- <args>` (or node directly, faster). */
export function admin(
  args: string[],
  env: Record<string, string>,
  options: { viaNpm?: boolean } = {},
): Promise<CliResult> {
  const [file, argv] = options.viaNpm
    ? ['npm', ['run', '--silent', 'admin', '--', ...args]]
    : [process.execPath, [path.join(root, 'cli/admin.ts'), ...args]];
  return new Promise((resolve, reject) => {
    execFile(
      file,
      argv,
      { cwd: root, env: { ...process.env, LOG_LEVEL: 'silent', ...env } },
      (error, stdout, stderr) => {
        try {
          resolve({
            code: error ? ((error as { code?: number }).code ?? 1) : 0,
            stdout: parse(stdout),
            stderr: parse(stderr),
          });
        } catch {
          reject(new Error(`CLI printed something other than JSON:\n${stdout}\n${stderr}`));
        }
      },
    );
  });
}
