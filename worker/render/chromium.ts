import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { chmod, cp, lstat, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createBrotliDecompress } from 'node:zlib';

import chromium from '@sparticuz/chromium';
import type { Browser } from 'playwright-core';
import tar from 'tar-fs';

import { ensureSystemUser, letOthersTraverse, type SystemUser } from '../../shared/embedded/systemUser.ts';
import type { Logger } from '../../shared/observability/logger.ts';

const require = createRequire(import.meta.url);
const execFileAsync = promisify(execFile);

/** A package's folder (the fonts ship as plain files inside their npm packages). */
function packageDir(name: string, entry = 'package.json'): string {
  return path.dirname(require.resolve(`${name}/${entry}`));
}

// @sparticuz/chromium exports only its code: its folder is two levels above the CommonJS build.
const sparticuzDir = path.resolve(path.dirname(require.resolve('@sparticuz/chromium')), '../..');

/** The unprivileged system user Chromium runs as when the worker runs as root. */
export const rendererUserName = 'svc-render';

/** Where the browser, its libraries and fonts are unpacked, once per machine and user. */
export type ChromiumInstall = {
  dir: string;
  executable: string;
  libDir: string;
  fontsConf: string;
  /** Set when the worker runs as root: the system user the browser runs as. */
  user: SystemUser | undefined;
  /** Why the browser cannot have a network of its own here (not root, `unshare --net` refused). */
  sharedNetworkReason: string | undefined;
};

/** What a browser launched by launchChromium is kept from. */
export type ChromiumIsolation = {
  /** The system user the browser runs as; undefined: the worker's own user (it is not root). */
  user: string | undefined;
  /** Chromium's own sandbox (user and PID namespaces, seccomp-bpf) confines its renderers. */
  sandbox: boolean;
  /** Why the sandbox is off (Chromium's words), when it is. */
  sandboxOffReason: string | undefined;
  /** The browser has a network namespace of its own, with no interface up: it reaches nothing. */
  privateNetwork: boolean;
};

// The package's defaults minus: --single-process (closing one context would kill the whole browser)
// and the two that loosen web security, which a renderer of untrusted documents must keep.
const droppedArgs = ['--single-process', '--disable-web-security', '--allow-running-insecure-content'];
// With the sandbox on, the package's --no-sandbox goes, and --no-zygote with it: Chromium forks its
// sandboxed renderers from the zygote and refuses a sandbox without one.
const sandboxOffArgs = ['--no-sandbox', '--no-zygote'];

export function browserArgs(sandbox: boolean): string[] {
  const dropped = new Set(sandbox ? [...droppedArgs, ...sandboxOffArgs] : droppedArgs);
  return chromium.args.filter((arg) => !dropped.has(arg));
}

async function unbrotli(source: string, target: NodeJS.WritableStream): Promise<void> {
  await pipeline(createReadStream(source), createBrotliDecompress(), target);
}

/**
 * The archives' entries become ours, and writable by us alone: as root, tar-fs would otherwise give
 * them the ids recorded in the archive (SwiftShader's are uid 1000, a real user on many machines).
 */
function extractOwned(dir: string) {
  const uid = process.getuid!();
  const gid = process.getgid!();
  return tar.extract(dir, { map: (header) => ({ ...header, uid, gid, mode: header.mode & ~0o022 }) });
}

/**
 * Unpacks into a fresh temp folder, then renames it into place: a rename is atomic, so another
 * process (a second worker, a parallel test file) either sees no install or a whole one, never a
 * binary being written (which fails with ETXTBSY when executed). The loser of the race discards its copy.
 */
async function unpack(target: string): Promise<void> {
  const bin = path.join(sparticuzDir, 'bin');
  await mkdir(path.dirname(target), { recursive: true });
  const temp = await mkdtemp(`${target}.partial-`);
  try {
    await unbrotli(
      path.join(bin, 'chromium.br'),
      createWriteStream(path.join(temp, 'chromium'), { mode: 0o755 }),
    );
    // NSS, NSPR and expat, which a bare machine lacks (lib/), and SwiftShader beside the binary.
    await unbrotli(path.join(bin, 'al2023.tar.br'), extractOwned(temp));
    await unbrotli(path.join(bin, 'swiftshader.tar.br'), extractOwned(temp));
    // mkdtemp made it 0700: the renderer's user must reach the browser. Nobody else may write it.
    await chmod(temp, 0o755);
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    if (!existsSync(path.join(target, 'chromium'))) throw error;
  }
}

/**
 * The install sits in a world-writable temp folder under a predictable name, and root runs a script
 * from it: it must be a real folder of ours that nobody else can write into.
 * @throws when it is not.
 */
async function checkOwnFolder(dir: string): Promise<void> {
  const info = await lstat(dir);
  if (!info.isDirectory() || info.uid !== process.getuid!() || (info.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} is not a folder of this user's that only it can write: remove it, it is unpacked again`,
    );
  }
}

/** Copies `source` to `target` through a temp folder and a rename, as the browser is unpacked. */
async function copyOnce(source: string, target: string): Promise<void> {
  if (existsSync(target)) return;
  const temp = await mkdtemp(`${target}.partial-`);
  try {
    await cp(source, temp, { recursive: true });
    await chmod(temp, 0o755);
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    if (!existsSync(target)) throw error;
  }
}

/**
 * Chromium aborts at the first text without a fontconfig configuration. The fonts are copied from
 * this checkout's node_modules into the install (named by the font packages' versions, so checkouts
 * with the same fonts share them), so the renderer's user never needs to reach the checkout. The
 * font cache goes to the browser's own home (XDG_CACHE_HOME), the one place it may write.
 */
async function installFonts(dir: string): Promise<string> {
  const sources = [
    { name: 'dejavu-fonts-ttf', files: path.join(packageDir('dejavu-fonts-ttf'), 'ttf') },
    // Devanagari (Nepali) glyphs: without them Nepali renders as boxes and extracts as U+0000.
    {
      name: '@expo-google-fonts/noto-sans-devanagari',
      files: packageDir('@expo-google-fonts/noto-sans-devanagari'),
    },
  ];
  const versions = await Promise.all(
    sources.map(async ({ name }) => {
      const manifest = JSON.parse(await readFile(path.join(packageDir(name), 'package.json'), 'utf8')) as {
        version: string;
      };
      return `${name}@${manifest.version}`;
    }),
  );
  // The aliases are part of the name too: a changed configuration is written afresh, never reused.
  const hash = createHash('sha256')
    .update([...versions, fontAliases].join('\n'))
    .digest('hex')
    .slice(0, 16);
  const fontsDir = path.join(dir, `fonts-${hash}`);
  const file = `${fontsDir}.conf`;
  if (existsSync(file)) return file;
  await mkdir(fontsDir, { recursive: true, mode: 0o755 });
  const targets = sources.map(({ name }) => path.join(fontsDir, name.replaceAll('/', '+')));
  for (const [i, source] of sources.entries()) await copyOnce(source.files, targets[i]!);
  const escape = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  const xml = [
    '<?xml version="1.0"?>',
    '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
    '<fontconfig>',
    ...targets.map((d) => `  <dir>${escape(d)}</dir>`),
    '  <cachedir prefix="xdg">fontconfig</cachedir>',
    fontAliases,
    '</fontconfig>',
    '',
  ].join('\n');
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, xml, { mode: 0o644 });
  await rename(temp, file);
  return file;
}

/**
 * Without aliases fontconfig resolves the generic families (`sans-serif`, `system-ui`, …) to
 * whatever it finds first: seen, "DejaVu Math TeX Gyre", a serif maths font. Pages and decks ask
 * for these families, so each is bound to the DejaVu face it names, with Noto Sans Devanagari
 * after it for Nepali text.
 */
const fontAliases = (
  [
    ['sans-serif', 'DejaVu Sans'],
    ['sans', 'DejaVu Sans'],
    ['system-ui', 'DejaVu Sans'],
    ['-apple-system', 'DejaVu Sans'],
    ['serif', 'DejaVu Serif'],
    ['monospace', 'DejaVu Sans Mono'],
    ['ui-monospace', 'DejaVu Sans Mono'],
  ] as const
)
  .map(
    ([generic, face]) =>
      `  <alias binding="strong"><family>${generic}</family><prefer><family>${face}</family><family>Noto Sans Devanagari</family></prefer></alias>`,
  )
  .join('\n');

/** A system tool's absolute path: the launcher script runs with no PATH. */
function systemTool(name: string): string {
  const found = ['/usr/bin', '/bin', '/usr/sbin', '/sbin']
    .map((dir) => path.join(dir, name))
    .find((file) => existsSync(file));
  if (!found) throw new Error(`${name} (util-linux/coreutils) is needed to isolate the deck renderer`);
  return found;
}

/**
 * As root the browser can get a network namespace of its own (no route anywhere, loopback included,
 * where the embedded PostgreSQL and S3 listen). A container without CAP_SYS_ADMIN refuses it.
 */
async function sharedNetworkReason(): Promise<string | undefined> {
  if (process.getuid!() !== 0) return 'the worker is not root';
  try {
    await execFileAsync(systemTool('unshare'), ['--net', '--', systemTool('true')]);
    return undefined;
  } catch (error) {
    return `unshare --net failed: ${(error as { stderr?: string }).stderr?.trim() || String(error)}`;
  }
}

let installing: Promise<ChromiumInstall> | undefined;

/**
 * The unpacked browser of this machine and user (os.tmpdir()/svc-chromium-<version>-<uid>),
 * unpacked on first use (~2 s), and, when we are root, the system user it runs as. Call it before
 * starting several processes to have them find it ready.
 */
export function ensureChromium(): Promise<ChromiumInstall> {
  if (!installing) {
    installing = install();
    // A failed unpack (a full disk) is tried again by the next caller.
    installing.catch(() => {
      installing = undefined;
    });
  }
  return installing;
}

async function install(): Promise<ChromiumInstall> {
  const { version } = JSON.parse(await readFile(path.join(sparticuzDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const dir = path.join(os.tmpdir(), `svc-chromium-${version}-${process.getuid!()}`);
  if (!existsSync(path.join(dir, 'chromium'))) await unpack(dir);
  await checkOwnFolder(dir);
  const isRoot = process.getuid!() === 0;
  if (isRoot) await letOthersTraverse(dir);
  return {
    dir,
    executable: path.join(dir, 'chromium'),
    libDir: path.join(dir, 'lib'),
    fontsConf: await installFonts(dir),
    user: isRoot ? await ensureSystemUser(rendererUserName) : undefined,
    sharedNetworkReason: await sharedNetworkReason(),
  };
}

/** A string the shell reads back as exactly `value`. */
const shellQuote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

/**
 * The executable Playwright starts in place of Chromium: it gives the browser Playwright's fresh
 * profile folder (--user-data-dir, 0700) as its home, cache and temp folder and working directory,
 * then, as root, hands that folder to the renderer's user and starts Chromium as that user (setpriv:
 * no groups, no capabilities, no new privileges), in a network namespace of its own when asked.
 * Written into the install (ours alone) under a name hashed from its text.
 */
async function writeLauncher(install: ChromiumInstall, privateNetwork: boolean): Promise<string> {
  const { user } = install;
  const command: string[] = [];
  if (privateNetwork) command.push(shellQuote(systemTool('unshare')), '--net', '--');
  if (user) {
    command.push(
      shellQuote(systemTool('setpriv')),
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      '--clear-groups',
      '--no-new-privs',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--',
    );
  }
  command.push(shellQuote(install.executable), '"$@"');
  const script = [
    '#!/bin/sh',
    '# Written by worker/render/chromium.ts (writeLauncher), which says why.',
    'set -eu',
    'profile=',
    'for arg do',
    '  case $arg in --user-data-dir=*) profile=${arg#--user-data-dir=} ;; esac',
    'done',
    'if [ -z "$profile" ]; then echo "launcher: no --user-data-dir" >&2; exit 64; fi',
    ...(user ? [`${shellQuote(systemTool('chown'))} ${user.uid}:${user.gid} -- "$profile"`] : []),
    'cd -- "$profile"',
    'unset OLDPWD',
    'export HOME="$profile" TMPDIR="$profile" XDG_CACHE_HOME="$profile"',
    `exec ${command.join(' ')}`,
    '',
  ].join('\n');
  const hash = createHash('sha256').update(script).digest('hex').slice(0, 16);
  const file = path.join(install.dir, `launch-${hash}.sh`);
  if (existsSync(file)) return file;
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, script, { mode: 0o700 });
  await rename(temp, file);
  return file;
}

type SandboxChoice = { sandbox: boolean; reason: string | undefined };

/** Whether this process's browsers run in Chromium's sandbox: tried once, by the first launch. */
let sandboxChoice: Promise<SandboxChoice> | undefined;

/** The line Chromium died with (its FATAL log line), else the error's first line. */
function chromiumComplaint(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const fatal = /:FATAL:[^\]]*\]\s*([^\n]*)/.exec(message)?.[1];
  return (fatal ?? message.split('\n')[0]!).slice(0, 300);
}

/** A sandbox that starts but kills every renderer (seccomp filters a kernel refuses) shows only here. */
async function renderSomething(browser: Browser): Promise<void> {
  const context = await browser.newContext({ javaScriptEnabled: false, offline: true });
  try {
    const page = await context.newPage();
    await page.setContent('<p>sandbox probe</p>');
    await page.pdf({ width: '1in', height: '1in' });
  } finally {
    await context.close();
  }
}

/**
 * Launches with the sandbox on; when the browser does not start or cannot render (no unprivileged
 * user namespaces: a distribution's policy, a container's seccomp profile, a chroot), launches
 * without it. A launch that timed out says nothing about the sandbox, so it is not taken as a no.
 */
async function chooseSandbox(
  start: (sandbox: boolean) => Promise<Browser>,
  isTimeout: (error: unknown) => boolean,
  logger: Logger,
): Promise<{ browser: Browser; choice: SandboxChoice }> {
  let failure: unknown;
  try {
    const browser = await start(true);
    try {
      await renderSomething(browser);
      return { browser, choice: { sandbox: true, reason: undefined } };
    } catch (error) {
      await browser
        .close()
        .catch((closeError: unknown) => logger.warn({ err: closeError }, 'closing a failed browser failed'));
      throw error;
    }
  } catch (error) {
    if (isTimeout(error)) throw error;
    failure = error;
  }
  const browser = await start(false);
  return { browser, choice: { sandbox: false, reason: chromiumComplaint(failure) } };
}

function reportIsolation(logger: Logger, isolation: ChromiumIsolation, sharedNetwork: string | undefined) {
  const runsAs = isolation.user ?? "the worker's own user";
  if (isolation.sandbox) {
    logger.info({ isolation, sharedNetwork }, `Chromium runs as ${runsAs}, in its own sandbox`);
  } else {
    logger.warn(
      { isolation, sharedNetwork },
      `Chromium runs as ${runsAs} with --no-sandbox: its sandbox cannot start here (${isolation.sandboxOffReason})`,
    );
  }
}

/**
 * Launches the browser with an environment of its own (the library path, the fonts, a time zone,
 * and from the launcher a private home): none of the worker's settings or secrets reach it. As root
 * it runs as the renderer's system user. Without `network`, it has a network of its own (root only)
 * and reaches nothing; tests that drive pages of a local server ask for `network`.
 * @throws when the browser cannot start, sandboxed or not, or times out.
 */
export async function launchChromium(options: {
  logger: Logger;
  network?: boolean;
  timeoutMs?: number;
}): Promise<{ browser: Browser; isolation: ChromiumIsolation }> {
  const install = await ensureChromium();
  // Loaded on the first render, not with the worker: a worker that renders no deck never needs it.
  const { chromium: playwright, errors } = await import('playwright-core');
  const privateNetwork = !options.network && install.sharedNetworkReason === undefined;
  const executablePath = await writeLauncher(install, privateNetwork);
  const start = (sandbox: boolean) =>
    playwright.launch({
      executablePath,
      args: browserArgs(sandbox),
      chromiumSandbox: sandbox,
      headless: true,
      timeout: options.timeoutMs ?? 30_000,
      env: {
        LD_LIBRARY_PATH: install.libDir,
        FONTCONFIG_FILE: install.fontsConf,
        TZ: 'UTC',
      },
    });
  const isolationWith = (choice: SandboxChoice): ChromiumIsolation => ({
    user: install.user?.name,
    sandbox: choice.sandbox,
    sandboxOffReason: choice.reason,
    privateNetwork,
  });
  if (sandboxChoice) {
    const choice = await sandboxChoice;
    return { browser: await start(choice.sandbox), isolation: isolationWith(choice) };
  }
  const first = chooseSandbox(start, (error) => error instanceof errors.TimeoutError, options.logger);
  const choosing = first.then(({ choice }) => choice);
  sandboxChoice = choosing;
  choosing.catch(() => {
    if (sandboxChoice === choosing) sandboxChoice = undefined;
  });
  const { browser, choice } = await first;
  const isolation = isolationWith(choice);
  reportIsolation(options.logger, isolation, options.network ? undefined : install.sharedNetworkReason);
  return { browser, isolation };
}
