import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';

import chromium from '@sparticuz/chromium';
import { type Browser, chromium as playwright } from 'playwright-core';
import tar from 'tar-fs';

const require = createRequire(import.meta.url);

/** A package's folder (the fonts ship as plain files inside their npm packages). */
function packageDir(name: string, entry = 'package.json'): string {
  return path.dirname(require.resolve(`${name}/${entry}`));
}

// @sparticuz/chromium exports only its code: its folder is two levels above the CommonJS build.
const sparticuzDir = path.resolve(path.dirname(require.resolve('@sparticuz/chromium')), '../..');

/** Where the browser, its libraries and our font configuration are unpacked, once per machine. */
export type ChromiumInstall = { dir: string; executable: string; libDir: string; fontsConf: string };

// The package's defaults minus: --single-process (closing one context would kill the whole browser)
// and the two that loosen web security, which a renderer of untrusted documents must keep.
const droppedArgs = new Set([
  '--single-process',
  '--disable-web-security',
  '--allow-running-insecure-content',
]);

export function browserArgs(): string[] {
  return chromium.args.filter((arg) => !droppedArgs.has(arg));
}

async function unbrotli(source: string, target: NodeJS.WritableStream): Promise<void> {
  await pipeline(createReadStream(source), createBrotliDecompress(), target);
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
    await unbrotli(path.join(bin, 'al2023.tar.br'), tar.extract(temp));
    await unbrotli(path.join(bin, 'swiftshader.tar.br'), tar.extract(temp));
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    if (!existsSync(path.join(target, 'chromium'))) throw error;
  }
}

/**
 * Chromium aborts at the first text without a fontconfig configuration. The font folders live in
 * this checkout's node_modules, so the file is named by their paths (several checkouts can share
 * the machine's browser) and written through a rename like the browser.
 */
async function writeFontsConf(dir: string): Promise<string> {
  const fontDirs = [
    path.join(packageDir('dejavu-fonts-ttf'), 'ttf'),
    // Devanagari (Nepali) glyphs: without them Nepali renders as boxes and extracts as U+0000.
    packageDir('@expo-google-fonts/noto-sans-devanagari'),
  ];
  const hash = createHash('sha256').update(fontDirs.join('\n')).digest('hex').slice(0, 16);
  const file = path.join(dir, `fonts-${hash}.conf`);
  if (existsSync(file)) return file;
  const escape = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
  const xml = [
    '<?xml version="1.0"?>',
    '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
    '<fontconfig>',
    ...fontDirs.map((d) => `  <dir>${escape(d)}</dir>`),
    `  <cachedir>${escape(path.join(dir, 'fontconfig-cache'))}</cachedir>`,
    '</fontconfig>',
    '',
  ].join('\n');
  const temp = `${file}.${process.pid}.tmp`;
  await writeFile(temp, xml);
  await rename(temp, file);
  return file;
}

let installing: Promise<ChromiumInstall> | undefined;

/**
 * The unpacked browser of this machine (os.tmpdir()/svc-chromium-<version>), unpacked on first use
 * (~2 s). Call it before starting several processes to have them find it ready.
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
  const dir = path.join(os.tmpdir(), `svc-chromium-${version}`);
  if (!existsSync(path.join(dir, 'chromium'))) await unpack(dir);
  return {
    dir,
    executable: path.join(dir, 'chromium'),
    libDir: path.join(dir, 'lib'),
    fontsConf: await writeFontsConf(dir),
  };
}

/**
 * Launches the browser with an environment of its own: only the library path, the fonts and a
 * home for its profile reach it, none of the worker's settings or secrets.
 */
export async function launchChromium(timeoutMs = 30_000): Promise<Browser> {
  const install = await ensureChromium();
  return playwright.launch({
    executablePath: install.executable,
    args: browserArgs(),
    headless: true,
    timeout: timeoutMs,
    env: {
      HOME: install.dir,
      LD_LIBRARY_PATH: install.libDir,
      FONTCONFIG_FILE: install.fontsConf,
      TZ: 'UTC',
    },
  });
}
