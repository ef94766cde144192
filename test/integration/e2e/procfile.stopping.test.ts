import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { freePort } from '../../../shared/embedded/freePort.ts';
import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';
import { mockReply, openaiEnv, type OpenAiMock, startOpenAiMock } from '../../helpers/openaiMock.ts';
import {
  groupMembers,
  isRunning,
  killGroups,
  logLines,
  type Spawned,
  spawnNpmScript,
} from '../../helpers/processes.ts';

let t: TestContext;
let tenant: Tenant;
let mock: OpenAiMock;
let tmpDir: string;
const groups = new Set<number>();

beforeAll(async () => {
  tmpDir = await mkdtemp(path.join(os.tmpdir(), 'svc-procfile-'));
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  mock = await startOpenAiMock();
});
afterAll(async () => {
  // Only a failed test leaves anything here.
  killGroups(groups);
  await mock.close();
  await t.close();
  await rm(tmpDir, { recursive: true, force: true });
});

type ProcfileProcess = { npm: Spawned; group: number; node: number };

/** The Procfile's `web` and `worker` lines (`npm run --silent start:web` / `start:worker`), each in its own group. */
async function startProcfile(): Promise<{ port: number; web: ProcfileProcess; worker: ProcfileProcess }> {
  const port = await freePort();
  const env = {
    DATABASE_URL: t.databaseUrl,
    S3_ENDPOINT: t.s3.endpoint,
    S3_BUCKET: t.s3.bucket,
    LOG_LEVEL: 'info',
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    // Where the processes' temporary files go, their compile cache among them.
    TMPDIR: tmpDir,
    ...openaiEnv(mock),
  };
  const start = async (script: string, ready: string): Promise<ProcfileProcess> => {
    const npm = spawnNpmScript(script, env);
    groups.add(npm.child.pid!);
    await npm.waitFor(new RegExp(`"msg":"${ready}"`));
    const node = logLines(npm.output()).find((line) => line.msg === ready)!.pid as number;
    return { npm, group: npm.child.pid!, node };
  };
  const web = await start('start:web', 'api listening');
  const worker = await start('start:worker', 'worker started');
  await worker.npm.waitFor(/Completed task \d+ \(status__probe/);
  return { port, web, worker };
}

/**
 * A synchronous POST /text in flight when the stop arrives (its job held at the provider) is
 * answered; both processes exit 0 with nothing of their groups left, and log no warning or error.
 */
async function expectCleanStop(send: (web: ProcfileProcess, worker: ProcfileProcess) => void): Promise<void> {
  const { port, web, worker } = await startProcfile();
  let release!: () => void;
  mock.queueChat({ kind: 'held', until: new Promise<void>((resolve) => (release = resolve)) });
  const atProvider = mock.nextRequest('/chat/completions');
  const answer = fetch(`http://127.0.0.1:${port}/api/pub/v1/text`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.liveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'drain us' }),
  });
  await atProvider;
  const from = { web: web.npm.output().length, worker: worker.npm.output().length };

  send(web, worker);
  await Promise.all([
    web.npm.waitFor(/"msg":"stopping"/, 20_000),
    worker.npm.waitFor(/"msg":"stopping"/, 20_000),
  ]);
  release();

  const res = await answer;
  expect(res.status).toBe(201);
  expect(((await res.json()) as { text: string }).text).toBe(mockReply('drain us'));
  for (const [name, p] of [
    ['web', web],
    ['worker', worker],
  ] as const) {
    expect(await p.npm.exited).toEqual({ code: 0, signal: null });
    expect(groupMembers(p.group)).toEqual([]);
    expect(isRunning(p.node)).toBe(false);
    const output = p.npm.output().slice(from[name]);
    expect(logLines(output).filter((line) => (line.level as number) >= 40)).toEqual([]);
    expect(output).not.toMatch(/terminating connection|Connection terminated|ECONNREFUSED|ECONNRESET/i);
    expect(output).toMatch(name === 'web' ? /"msg":"api stopped"/ : /"msg":"worker stopped"/);
  }
}

describe("stopping the Procfile's web and worker processes drains them, leaving nothing", () => {
  it('SIGTERM to each npm process', async () => {
    await expectCleanStop((web, worker) => {
      process.kill(web.npm.child.pid!, 'SIGTERM');
      process.kill(worker.npm.child.pid!, 'SIGTERM');
    });
  });

  // Two runners in one start (to keep the suite fast): each process still receives the signal
  // twice, from the group signal and forwarded by npm.
  it('SIGTERM to every process of the web group (a platform stopping a dyno), Ctrl-C to the worker group', async () => {
    await expectCleanStop((web, worker) => {
      process.kill(-web.group, 'SIGTERM');
      process.kill(-worker.group, 'SIGINT');
    });
  });

  it('leaves the compiled platform for the next start, in the temporary directory', async () => {
    // Node keeps one entry per compiled module: the api's and the worker's graphs are well over a thousand.
    const entries = await readdir(path.join(tmpDir, 'node-compile-cache'), { recursive: true });
    expect(entries.length).toBeGreaterThan(1000);
  });
});
