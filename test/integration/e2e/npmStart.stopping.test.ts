import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { freePort } from '../../../shared/embedded/freePort.ts';
import { mockReply, openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import {
  groupMembers,
  isRunning,
  killGroups,
  logLines,
  processGroupOf,
  type Spawned,
  spawnNpmScript,
} from '../../helpers/processes.ts';

// One data directory for the file: the first start creates the cluster and the demo keys, the
// others reuse them, as a machine restarting `npm start` does.
let dataDir: string;
let port: number;
let mock: OpenAiMock;
let liveKey: string | undefined;
const groups = new Set<number>();

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-stop-'));
  port = await freePort();
  mock = await startOpenAiMock();
});
afterAll(async () => {
  // Only a failed test leaves anything here.
  killGroups(groups);
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
});

type Platform = {
  npm: Spawned;
  /** npm's process group: npm, the script's shell if any, node. */
  group: number;
  node: number;
  postmaster: number;
  postgresGroup: number;
};

/** `npm start` on the embedded defaults (live keys answered by the mock provider), once ready. */
async function startPlatform(): Promise<Platform> {
  const npm = spawnNpmScript('start', {
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: '',
    S3_ENDPOINT: '',
    LOG_LEVEL: 'info',
    ...openaiEnv(mock),
  });
  const group = npm.child.pid!;
  groups.add(group);
  await npm.waitFor(/"msg":"platform ready"/, 120_000);
  liveKey ??= (await npm.waitFor(/live key\s+(svc_sk_live_\S+)/))[1]!;
  // The worker's boot probe calls the api: let it finish so it is not part of what is stopped.
  await npm.waitFor(/Completed task \d+ \(status__probe/);
  const ready = logLines(npm.output()).find((line) => line.msg === 'platform ready')!;
  // postmaster.pid's first line is the server's pid (PostgreSQL's documented layout).
  const postmaster = Number(
    readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  const postgresGroup = processGroupOf(postmaster);
  groups.add(postgresGroup);
  return { npm, group, node: ready.pid as number, postmaster, postgresGroup };
}

/** A synchronous POST /text whose job is running in the worker, held at the provider until released. */
async function requestInFlight(): Promise<{ answer: Promise<Response>; release(): void }> {
  let release!: () => void;
  mock.queueChat({ kind: 'held', until: new Promise<void>((resolve) => (release = resolve)) });
  const atProvider = mock.nextRequest('/chat/completions');
  const answer = fetch(`http://127.0.0.1:${port}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'drain me' }),
  });
  await atProvider;
  return { answer, release };
}

/**
 * Sends the stop, and proves: the request in flight is answered; the api, then the worker, then
 * PostgreSQL stop, in that order; nothing of the tree is left; no error or warning is logged.
 */
async function expectCleanStop(platform: Platform, send: () => void): Promise<void> {
  const inFlight = await requestInFlight();
  const from = platform.npm.output().length;
  send();
  await platform.npm.waitFor(/"msg":"stopping"/, 20_000);
  inFlight.release();

  const answer = await inFlight.answer;
  expect(answer.status).toBe(201);
  expect(((await answer.json()) as { text: string }).text).toBe(mockReply('drain me'));

  expect(await platform.npm.exited).toEqual({ code: 0, signal: null });
  // npm exits after node, node after PostgreSQL: by now every one of them must be gone.
  expect(groupMembers(platform.group)).toEqual([]);
  expect(isRunning(platform.node)).toBe(false);
  expect(isRunning(platform.postmaster)).toBe(false);
  expect(groupMembers(platform.postgresGroup)).toEqual([]);

  const output = platform.npm.output().slice(from);
  const lines = logLines(output);
  const at = (test: (line: Record<string, unknown>) => boolean) => lines.findIndex(test);
  const message = (text: string) => (line: Record<string, unknown>) => line.msg === text;
  const postgres = (pattern: RegExp) => (line: Record<string, unknown>) =>
    line.component === 'postgres' && pattern.test(String(line.msg));
  const apiStopped = at(message('api stopped'));
  const workerStopped = at(message('worker stopped'));
  const shutdownRequested = at(postgres(/received (fast|smart|immediate) shutdown request/));
  const databaseDown = at(postgres(/database system is shut down/));
  expect(apiStopped).toBeGreaterThan(-1);
  expect(workerStopped).toBeGreaterThan(apiStopped);
  expect(shutdownRequested).toBeGreaterThan(workerStopped);
  expect(databaseDown).toBeGreaterThan(shutdownRequested);
  expect(at(message('services stopped'))).toBeGreaterThan(databaseDown);

  // level 40 is warn: no connection (or any other) trouble while draining.
  expect(lines.filter((line) => (line.level as number) >= 40)).toEqual([]);
  expect(output).not.toMatch(/terminating connection|Connection terminated|ECONNREFUSED|ECONNRESET/i);
}

describe('stopping npm start drains the api and the worker, then stops PostgreSQL, leaving nothing', () => {
  it('SIGTERM to the npm process (a supervisor, a container runtime)', async () => {
    const platform = await startPlatform();
    await expectCleanStop(platform, () => process.kill(platform.npm.child.pid!, 'SIGTERM'));
  }, 180_000);

  it('SIGTERM to the node process', async () => {
    const platform = await startPlatform();
    await expectCleanStop(platform, () => process.kill(platform.node, 'SIGTERM'));
  }, 120_000);

  it('Ctrl-C: SIGINT to the whole foreground process group, as a terminal sends it', async () => {
    const platform = await startPlatform();
    await expectCleanStop(platform, () => process.kill(-platform.group, 'SIGINT'));
  }, 120_000);
});
