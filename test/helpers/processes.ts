import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export type Spawned = {
  child: ChildProcess;
  output(): string;
  /** Resolves with the output once `pattern` appears in it. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** How the process ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
};

/**
 * Runs `command` with `args` from the project root, collecting its output. `detached` gives it a
 * process group of its own (its pid), which the test can then signal as a terminal or a supervisor
 * signals a foreground job.
 */
export function spawnProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { detached?: boolean } = {},
): Spawned {
  const child = spawn(command, args, {
    cwd: projectRoot,
    env: { ...process.env, NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let text = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    text += chunk.toString('utf8');
    for (const waiter of [...waiters]) waiter();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    output: () => text,
    waitFor: (pattern, timeoutMs = 60_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const match = text.match(pattern);
          if (match) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(match);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${pattern} in:\n${text}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return (await exited).code;
    },
  };
}

/** Runs a project entry point (e.g. `api/server.ts`) in its own Node process, collecting its output. */
export function spawnNode(file: string, env: Record<string, string>): Spawned {
  return spawnProcess(process.execPath, [path.join(projectRoot, file)], env);
}

/** Runs `npm run --silent <script>` as an operator or a Procfile runner does, in its own process group. */
export function spawnNpmScript(script: string, env: Record<string, string>): Spawned {
  return spawnProcess('npm', ['run', '--silent', script], env, { detached: true });
}

/** The JSON lines (pino's) of a process's output. */
export function logLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields resume after its last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Is `pid` a live process (a zombie, dead but not yet reaped, counts as gone)? */
export function isRunning(pid: number): boolean {
  const state = statFields(pid)?.[0];
  return state !== undefined && state !== 'Z' && state !== 'X';
}

/** The process group of a live process. */
export function processGroupOf(pid: number): number {
  const group = statFields(pid)?.[2];
  if (group === undefined) throw new Error(`no process ${pid}`);
  return Number(group);
}

/** The live processes of process group `group`, read from /proc. */
export function groupMembers(group: number): number[] {
  return allPids().filter((pid) => statFields(pid)?.[2] === String(group) && isRunning(pid));
}

/** The live child processes of `pid`. */
export function childrenOf(pid: number): number[] {
  return allPids().filter((child) => statFields(child)?.[1] === String(pid) && isRunning(child));
}

function allPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

/** Ends every process of each group (cleanup after a test that may have failed half way). */
export function killGroups(groups: Iterable<number>): void {
  for (const group of groups) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // Already empty.
    }
  }
}
