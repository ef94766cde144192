import { runAdmin } from './runAdmin.ts';

/** The table the CLI runs, for callers that drive one command directly. */
export { commands } from './commands/index.ts';

/**
 * `npm run --silent admin -- <noun> <verb> [flags]` (DESIGN.md "Operator CLI"). It exits outright
 * once the answer is written, as it always has, rather than waiting on whatever a library left open.
 */
if (import.meta.main) {
  const code = await runAdmin(process.argv.slice(2), process.env, {
    stdout: (text) => process.stdout.write(text),
    stderr: (text) => process.stderr.write(text),
  });
  process.exit(code);
}
