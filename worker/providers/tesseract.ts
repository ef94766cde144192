import { createHash } from 'node:crypto';
import { mkdirSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import Tesseract from 'tesseract.js';

import { type OcrProvider, type OcrRequest, ProviderError } from '../../shared/providers/types.ts';

/** Tesseract's language codes for the hints the API accepts. */
export type OcrLanguage = 'eng' | 'nep';

export const ocrModel = 'tesseract-5-lstm';

const require = createRequire(import.meta.url);

/** The LSTM-only ("best_int") traineddata shipped by the @tesseract.js-data packages. */
function installedTraineddata(lang: OcrLanguage): string {
  const pkg = path.dirname(require.resolve(`@tesseract.js-data/${lang}/package.json`));
  return path.join(pkg, '4.0.0_best_int', `${lang}.traineddata.gz`);
}

let tessdataDir: string | undefined;

/**
 * tesseract.js reads every language of a worker from one `langPath`, while npm installs each
 * language in its own package. A directory of symlinks to the installed files joins them, so
 * nothing is downloaded or copied at run time. Its name hashes the targets: installs side by side
 * (or a moved node_modules) never share a stale directory.
 */
export function tessdata(): string {
  if (tessdataDir) return tessdataDir;
  const targets = (['eng', 'nep'] as const).map((lang) => [lang, installedTraineddata(lang)] as const);
  const digest = createHash('sha256')
    .update(targets.map(([, t]) => t).join('\n'))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(os.tmpdir(), `svc-tessdata-${digest}`);
  mkdirSync(dir, { recursive: true });
  for (const [lang, target] of targets) {
    const link = path.join(dir, `${lang}.traineddata.gz`);
    try {
      if (readlinkSync(link) === target) continue;
      unlinkSync(link);
    } catch {
      // Missing link: create it below.
    }
    try {
      symlinkSync(target, link);
    } catch (error) {
      // Another process created it in between.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  tessdataDir = dir;
  return dir;
}

/**
 * The languages to read with. `auto` decides from the filename (Devanagari letters or a
 * ne/nep/nepali token mean Nepali, en/eng/english mean English) and otherwise reads with both.
 */
export function resolveOcrLanguages(
  hint: OcrRequest['languageHint'],
  filename: string | undefined,
): OcrLanguage[] {
  if (hint === 'en') return ['eng'];
  if (hint === 'ne') return ['nep'];
  const name = (filename ?? '').toLowerCase();
  if (/[\u0900-\u097f]/.test(name)) return ['nep'];
  const tokens = new Set(name.replace(/\.[a-z0-9]+$/, '').split(/[^a-z0-9]+/));
  const nepali = ['ne', 'nep', 'nepali', 'np'].some((t) => tokens.has(t));
  const english = ['en', 'eng', 'english'].some((t) => tokens.has(t));
  if (nepali && !english) return ['nep'];
  if (english && !nepali) return ['eng'];
  return ['eng', 'nep'];
}

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif' | 'bmp' | 'pnm';

/** The image format from its leading bytes; undefined for anything tesseract cannot read (PDF, TIFF, AVIF …). */
export function sniffImageFormat(data: Buffer): ImageFormat | undefined {
  if (data.length >= 8 && data.readUInt32BE(0) === 0x89504e47) return 'png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'jpeg';
  if (
    data.length >= 12 &&
    data.toString('ascii', 0, 4) === 'RIFF' &&
    data.toString('ascii', 8, 12) === 'WEBP'
  ) {
    return 'webp';
  }
  if (data.length >= 6 && /^GIF8[79]a$/.test(data.toString('ascii', 0, 6))) return 'gif';
  if (data.length >= 26 && data.toString('ascii', 0, 2) === 'BM') return 'bmp';
  if (
    data.length >= 3 &&
    data[0] === 0x50 &&
    data[1]! >= 0x31 &&
    data[1]! <= 0x36 &&
    /\s/.test(String.fromCharCode(data[2]!))
  ) {
    return 'pnm';
  }
  return undefined;
}

/** Thrown for data tesseract cannot read: retrying cannot help, and the caller should hear why. */
export class UnreadableImageError extends ProviderError {
  constructor() {
    super('The OCR data is not a PNG, JPEG, WebP, GIF, BMP or PNM image.', false);
    this.name = 'UnreadableImageError';
  }
}

// A tesseract worker holds ~100 MB once its languages are loaded: keep it between jobs, drop it when idle.
const idleTerminateMs = 60_000;

type Slot = { worker: Promise<Tesseract.Worker>; busy: number; idle?: NodeJS.Timeout };

/** The worker thread behind a tesseract.js worker (not in its typings). */
function threadOf(worker: Tesseract.Worker): { ref(): void; unref(): void } | undefined {
  return (worker as unknown as { worker?: { ref(): void; unref(): void } }).worker;
}

/**
 * OCR with tesseract.js in worker threads, one tesseract worker per language set, reused across
 * jobs (which queue on it). A cancelled job terminates its worker, since recognition cannot be
 * interrupted any other way; a job queued on the same worker then fails retryably and runs again.
 */
export function makeTesseractOcr(): OcrProvider & { close(): Promise<void> } {
  const slots = new Map<string, Slot>();

  const drop = async (key: string, slot: Slot) => {
    if (slots.get(key) === slot) slots.delete(key);
    clearTimeout(slot.idle);
    await slot.worker.then((w) => w.terminate()).catch(() => {});
  };

  const acquire = (langs: OcrLanguage[]): { key: string; slot: Slot } => {
    const key = langs.join('+');
    let slot = slots.get(key);
    if (!slot) {
      const created: Slot = {
        busy: 0,
        worker: Tesseract.createWorker(langs, Tesseract.OEM.LSTM_ONLY, {
          langPath: tessdata(),
          cacheMethod: 'none',
          gzip: true,
          // Without a handler tesseract.js rethrows worker errors as uncaught exceptions.
          errorHandler: () => {},
        }),
      };
      created.worker.catch(() => void drop(key, created));
      slots.set(key, created);
      slot = created;
    }
    clearTimeout(slot.idle);
    slot.busy += 1;
    return { key, slot };
  };

  const release = (key: string, slot: Slot) => {
    slot.busy -= 1;
    if (slot.busy > 0 || slots.get(key) !== slot) return;
    // An idle engine must not keep the process alive: a stopping worker exits without waiting for it.
    void slot.worker.then((w) => threadOf(w)?.unref()).catch(() => {});
    slot.idle = setTimeout(() => void drop(key, slot), idleTerminateMs);
    slot.idle.unref();
  };

  return {
    async extract({ data, filename, languageHint, signal }) {
      if (!sniffImageFormat(data)) throw new UnreadableImageError();
      signal.throwIfAborted();
      const languages = resolveOcrLanguages(languageHint, filename);
      const { key, slot } = acquire(languages);
      const onAbort = () => void drop(key, slot);
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const worker = await slot.worker;
        threadOf(worker)?.ref();
        const { data: out } = await worker.recognize(data);
        signal.throwIfAborted();
        return { text: out.text.replace(/\s+$/, ''), pages: 1, model: ocrModel, languages };
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        // A header that looked right over bytes leptonica cannot decode: retrying reads the same bytes.
        if (/read image|pix not read|not valid format/i.test(String(error))) throw new UnreadableImageError();
        throw new ProviderError(`tesseract failed: ${String(error)}`, true, { cause: error });
      } finally {
        signal.removeEventListener('abort', onAbort);
        release(key, slot);
      }
    },
    async close() {
      await Promise.all([...slots].map(([key, slot]) => drop(key, slot)));
    },
  };
}
