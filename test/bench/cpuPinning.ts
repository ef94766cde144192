import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';

export type CoreSplit = {
  /** taskset's list for the processes measured: the machine's last core, theirs alone. */
  measured: string;
  /** Puts the bench and its PostgreSQL back on every core. */
  restore(): void;
};

function parentOf(pid: string): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1];
  } catch {
    return undefined;
  }
}

/** This process and every process below it (the embedded PostgreSQL server and its backends). */
function ownTree(): string[] {
  const children = new Map<string, string[]>();
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    const parent = parentOf(pid);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), pid]);
  }
  const tree: string[] = [];
  const walk = (pid: string) => {
    tree.push(pid);
    for (const child of children.get(pid) ?? []) walk(child);
  };
  walk(String(process.pid));
  return tree;
}

function pin(pids: string[], cpus: string): void {
  for (const pid of pids) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpus, pid], { stdio: 'ignore' });
    } catch {
      // The process ended while we looked.
    }
  }
}

/**
 * Gives the processes a scenario measures a core of their own: the bench (its load generator, its
 * receiver) and its PostgreSQL move to the other cores, and new backends, forked by the pinned
 * server, follow. On a shared 2-core host the api otherwise competes with both for every cycle, and
 * a cost of a few microseconds a call drowns in their swings. Nothing where there is one core or no
 * taskset.
 */
export function splitCores(): CoreSplit | undefined {
  const cores = os.availableParallelism();
  if (cores < 2) return undefined;
  try {
    execFileSync('taskset', ['-V'], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  const all = `0-${cores - 1}`;
  pin(ownTree(), cores === 2 ? '0' : `0-${cores - 2}`);
  return { measured: String(cores - 1), restore: () => pin(ownTree(), all) };
}
