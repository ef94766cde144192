import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { chmod, mkdtemp, rm, rmdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Browser, Page } from 'playwright-core';

import { type EmbeddedS3Handle, startEmbeddedS3 } from '../../../shared/embedded/s3.ts';
import { systemUserIds } from '../../../shared/embedded/systemUser.ts';
import { createLogger } from '../../../shared/observability/logger.ts';
import { ObjectStore } from '../../../shared/storage/objectStore.ts';
import {
  type ChromiumIsolation,
  ensureChromium,
  launchChromium,
  rendererUserName,
} from '../../../worker/render/chromium.ts';
import { childrenOf, groupMembers, logLines, projectRoot, spawnProcess } from '../../helpers/processes.ts';

const execFileAsync = promisify(execFile);
const logger = createLogger('silent', 'render-isolation');
const isRoot = process.getuid!() === 0;
/** Checks that only mean something when the worker is root (the browser then has a user of its own). */
const describeAsRoot = isRoot ? describe : describe.skip;

// Secrets of the kinds a worker holds, in this process (the worker here) before the browser starts.
const sentinel = `sentinel-${randomBytes(8).toString('hex')}`;
const secretVariables = {
  DATABASE_URL: `postgres://svc:${sentinel}@127.0.0.1:5432/svc`,
  S3_SECRET_KEY: sentinel,
  OPENAI_API_KEY: `sk-${sentinel}`,
};
const savedVariables = Object.fromEntries(
  Object.keys(secretVariables).map((name) => [name, process.env[name]]),
);

// What the browser's environment may hold: launchChromium's variables and the launcher's home.
const allowedVariables = [
  'LD_LIBRARY_PATH',
  'FONTCONFIG_FILE',
  'TZ',
  'HOME',
  'TMPDIR',
  'XDG_CACHE_HOME',
  'PWD',
];

let browser: Browser;
let isolation: ChromiumIsolation;
let browserPid: number;
let dataDir: string;
let s3: EmbeddedS3Handle;
let server: Server;

/** The browser processes this process started (Playwright runs each in a process group of its own). */
async function browserPidsOf(parent: number): Promise<number[]> {
  const { executable } = await ensureChromium();
  return childrenOf(parent).filter((pid) => readlinkSync(`/proc/${pid}/exe`) === executable);
}

function status(pid: number, field: string): string {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return line!.slice(field.length + 1).trim();
}

/** What `read` returns, or undefined if the process it reads from has exited meanwhile. */
function stillRunning<T>(read: () => T): T | undefined {
  try {
    return read();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ESRCH' || code === 'ENOENT') return undefined;
    throw error;
  }
}

function environment(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, 'utf8')
    .split('\0')
    .filter(Boolean)
    .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]);
  return Object.fromEntries(entries) as Record<string, string>;
}

/** The text a page shows for `url`, or `refused: <why>` when the browser cannot load it. */
async function textAt(page: Page, url: string): Promise<string> {
  try {
    await page.goto(url);
    return await page.innerText('body');
  } catch (error) {
    return `refused: ${(error as Error).message.split('\n')[0]}`;
  }
}

async function withPage<T>(from: Browser, use: (page: Page) => Promise<T>): Promise<T> {
  const context = await from.newContext();
  try {
    return await use(await context.newPage());
  } finally {
    await context.close();
  }
}

/** Whether this kernel lets the browser's user create a user namespace (what Chromium's sandbox needs). */
async function kernelAllowsUserNamespaces(): Promise<boolean> {
  const user = isRoot ? await systemUserIds(rendererUserName) : undefined;
  const command = user
    ? ['setpriv', `--reuid=${user.uid}`, `--regid=${user.gid}`, '--clear-groups', 'unshare', '--user', 'true']
    : ['unshare', '--user', 'true'];
  return execFileAsync(command[0]!, command.slice(1)).then(
    () => true,
    () => false,
  );
}

beforeAll(async () => {
  Object.assign(process.env, secretVariables);
  // A DATA_DIR as the worker makes it in a checkout (mkdir: 0755).
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-render-data-'));
  await chmod(dataDir, 0o755);
  s3 = await startEmbeddedS3(path.join(dataDir, 's3'), 'isolation');
  server = createServer((_req, res) => res.end(`reachable ${sentinel}`)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  const before = new Set(await browserPidsOf(process.pid));
  ({ browser, isolation } = await launchChromium({ logger }));
  browserPid = (await browserPidsOf(process.pid)).find((pid) => !before.has(pid))!;
});
afterAll(async () => {
  await browser?.close();
  server?.close();
  await s3?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
  for (const [name, value] of Object.entries(savedVariables)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe("the deck renderer's Chromium", () => {
  it("runs as the renderer's own user when the worker is root, with none of the worker's environment", async () => {
    const processes = groupMembers(browserPid);
    expect(processes.length).toBeGreaterThan(1);
    const expectedUid = isRoot ? (await systemUserIds(rendererUserName)).uid : process.getuid!();
    expect(isolation.user).toBe(isRoot ? rendererUserName : undefined);
    const checked = processes.filter((pid) => {
      // Chromium's helpers come and go: one that exits while it is read runs nothing any more.
      const seen = stillRunning(() => ({
        uids: status(pid, 'Uid').split(/\s+/),
        environ: readFileSync(`/proc/${pid}/environ`, 'latin1'),
      }));
      if (seen === undefined) return false;
      // Real, effective, saved and filesystem uid alike.
      expect(seen.uids).toEqual(Array(4).fill(String(expectedUid)));
      expect(seen.environ).not.toContain(sentinel);
      return true;
    });
    expect(checked).toContain(browserPid);
    expect(checked.length).toBeGreaterThan(1);
    const env = environment(browserPid);
    expect(Object.keys(env).filter((name) => !allowedVariables.includes(name))).toEqual([]);
    // Its home and temp folder are its own: the fresh profile folder, which nobody else can read.
    expect(env.TMPDIR).toBe(env.HOME);
    const home = statSync(env.HOME!);
    expect({ uid: home.uid, mode: home.mode & 0o777 }).toEqual({ uid: expectedUid, mode: 0o700 });
  });

  it("confines its renderers in Chromium's sandbox where the kernel allows it", async () => {
    const allowed = await kernelAllowsUserNamespaces();
    expect(isolation.sandbox).toBe(allowed);
    await withPage(browser, async (page) => {
      await page.setContent('<p>a renderer for this page</p>');
      const renderers = groupMembers(browserPid).filter((pid) =>
        // Chromium rewrites its children's command lines (one string, spaces between the switches).
        readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer'),
      );
      expect(renderers.length).toBeGreaterThan(0);
      for (const pid of renderers) {
        // seccomp-bpf filter mode, and a user namespace other than the browser's.
        expect(status(pid, 'Seccomp')).toBe(allowed ? '2' : '0');
        expect(readlinkSync(`/proc/${pid}/ns/user`) !== readlinkSync(`/proc/${browserPid}/ns/user`)).toBe(
          allowed,
        );
      }
    });
  });

  describeAsRoot('when the worker is root', () => {
    it("cannot read the worker's files, its /proc entries or the embedded S3's objects", async () => {
      const publicFile = path.join(dataDir, 'public.txt');
      await writeFile(publicFile, `public ${sentinel}`, { mode: 0o644 });
      const secretFile = path.join(dataDir, 'secret.txt');
      await writeFile(secretFile, `secret ${sentinel}`, { mode: 0o600 });
      const store = new ObjectStore({
        endpoint: s3.endpoint,
        accessKey: 'S3RVER',
        secretKey: 'S3RVER',
        bucket: 'isolation',
        region: 'us-east-1',
      });
      const object = Buffer.from(`object ${sentinel}`);
      await store.put('secret.txt', object, object.length, 'text/plain');
      const objectFile = path.join(dataDir, 's3', 'isolation', 'secret.txt._S3rver_object');
      expect(readFileSync(objectFile, 'utf8')).toBe(`object ${sentinel}`);

      // Each in a fresh page: a refused load still commits an error page, which would interrupt the next.
      const read = (file: string) => withPage(browser, (page) => textAt(page, `file://${file}`));
      // The browser does read files: what it is refused below is refused for who it runs as.
      expect(await read(publicFile)).toBe(`public ${sentinel}`);
      // Chromium says "not found" for a file under a folder it may not enter (the S3 objects').
      for (const file of [secretFile, objectFile, `/proc/${process.pid}/environ`]) {
        expect(await read(file)).toMatch(/^refused: .*net::ERR_(ACCESS_DENIED|FILE_NOT_FOUND)/);
      }
    });

    it('reaches nothing on the network, loopback included, where the kernel gives it one of its own', async () => {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
      const unshared = await execFileAsync('unshare', ['--net', 'true']).then(
        () => true,
        () => false,
      );
      expect(isolation.privateNetwork).toBe(unshared);
      const { browser: networked } = await launchChromium({ logger, network: true });
      try {
        // A browser launched with the machine's network loads the page the renderer cannot.
        expect(await withPage(networked, (page) => textAt(page, url))).toBe(`reachable ${sentinel}`);
      } finally {
        await networked.close();
      }
      const seen = await withPage(browser, (page) => textAt(page, url));
      expect(seen).toMatch(unshared ? /^refused: / : /^reachable /);
    });

    it('falls back to --no-sandbox, saying why, where the kernel refuses user namespaces', async () => {
      // Inside a chroot the kernel refuses to create user namespaces (EPERM), as some distributions'
      // policies and containers' seccomp profiles do: the worker's renderer must still render.
      const root = await mkdtemp(path.join(os.tmpdir(), 'svc-chroot-'));
      try {
        const probe = spawnProcess(
          'unshare',
          [
            '--mount',
            '--propagation',
            'private',
            '--',
            'sh',
            '-c',
            'mount --rbind / "$1" && exec chroot "$1" "$2" "$3"',
            'sh',
            root,
            process.execPath,
            path.join(projectRoot, 'test/helpers/deckRenderProbe.ts'),
          ],
          {},
        );
        expect(await probe.exited).toEqual({ code: 0, signal: null });
        expect(probe.output()).toMatch(/^rendered %PDF- \d+$/m);
        const reports = logLines(probe.output()).filter((line) => line.isolation);
        expect(reports).toHaveLength(1);
        expect(reports[0]).toMatchObject({
          level: 40,
          isolation: { user: rendererUserName, sandbox: false },
        });
        expect(reports[0]!.msg).toMatch(/--no-sandbox: its sandbox cannot start here \(No usable sandbox!/);
      } finally {
        // Only ever rmdir: the bind mount lived in the probe's own mount namespace, gone with it.
        await rmdir(root);
      }
    });
  });
});
