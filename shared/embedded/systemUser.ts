import { execFile } from 'node:child_process';
import { chmod, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export type SystemUser = { name: string; uid: number; gid: number };

/**
 * The ids of system user `name`.
 * @throws when there is no such user (`id` fails).
 */
export async function systemUserIds(name: string): Promise<SystemUser> {
  const [uid, gid] = await Promise.all(
    ['-u', '-g'].map(async (flag) => Number((await execFileAsync('id', [flag, name])).stdout.trim())),
  );
  return { name, uid: uid!, gid: gid! };
}

/**
 * The system user `name`, created (with a group of its own, no home, no login shell) when missing.
 * Several processes may start at once: one whose `useradd` loses the race (the name is taken, or
 * /etc/passwd is locked for a moment) finds the user the winner made.
 * @throws when the user neither exists nor can be created (no `useradd`, not root), with its output.
 */
export async function ensureSystemUser(name: string): Promise<SystemUser> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const existing = await systemUserIds(name).catch(() => undefined);
    if (existing) return existing;
    try {
      await execFileAsync('useradd', [
        '--system',
        '--user-group',
        '--no-create-home',
        '--home-dir',
        '/nonexistent',
        '--shell',
        '/usr/sbin/nologin',
        name,
      ]);
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100 * (attempt + 1)));
    }
  }
  const existing = await systemUserIds(name).catch(() => undefined);
  if (existing) return existing;
  throw new Error(`could not create the system user ${name}`, { cause: lastError });
}

/**
 * Lets other users (a service's own system user) traverse every directory above `target`: adds the
 * search (execute) bit for others to each ancestor lacking it; nothing is made readable or writable.
 * A checkout under a 0700 `mktemp -d` is otherwise out of their reach.
 */
export async function letOthersTraverse(target: string): Promise<void> {
  for (let dir = path.dirname(target); ; dir = path.dirname(dir)) {
    const mode = (await stat(dir)).mode;
    if ((mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o001);
    if (dir === path.dirname(dir)) return;
  }
}
