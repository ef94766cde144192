import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, describe, expect, it } from '@jest/globals';

import { isRunning, killGroups, processGroupOf, spawnProcess } from '../../helpers/processes.ts';

let dataDir: string | undefined;
const groups = new Set<number>();

afterAll(async () => {
  // Only a failed test leaves anything here.
  killGroups(groups);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

/** Resolves once `pid` is gone; rejects after `timeoutMs`. */
async function exitOf(pid: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still running after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('embedded PostgreSQL and the process that started it', () => {
  it('runs in a process group of its own, and stops when its owner is killed outright', async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-pg-owner-'));
    const owner = spawnProcess(
      process.execPath,
      [path.join('test', 'helpers', 'embeddedPostgresOwner.ts')],
      { PG_DATA_DIR: path.join(dataDir, 'postgres') },
      { detached: true },
    );
    groups.add(owner.child.pid!);
    await owner.waitFor(/^ready$/m, 90_000);
    // postmaster.pid's first line is the server's pid (PostgreSQL's documented layout).
    const postmaster = Number(
      readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
    );
    const serverGroup = processGroupOf(postmaster);
    groups.add(serverGroup);
    // A terminal's Ctrl-C goes to the owner's group; the server is not in it.
    expect(serverGroup).not.toBe(owner.child.pid);

    owner.child.kill('SIGKILL');
    expect(await owner.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await exitOf(postmaster);
    expect(isRunning(postmaster)).toBe(false);
  }, 120_000);
});
