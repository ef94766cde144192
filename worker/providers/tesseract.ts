import { createHash } from 'node:crypto';
import { mkdirSync, readlinkSync, symlinkSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import Tesseract from 'tesseract.js';

import { ocrMaxPixels } from '../../shared/jobs/generationInputs.ts';
import {
  type ImageDimensions,
  oversizedImageMessage,
  readImageDimensions,
} from '../../shared/media/imageDimensions.ts';
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

/**
 * An OCR read refused for its input: retrying cannot help, and the caller hears `publicCode` and
 * the message (the job's public error).
 */
export class OcrInputError extends ProviderError {
  readonly publicCode: 'unsupported_media_type' | 'file_too_large';
  constructor(publicCode: OcrInputError['publicCode'], message: string) {
    super(message, false);
    this.name = 'OcrInputError';
    this.publicCode = publicCode;
  }
}

/** Data tesseract cannot read (not one of its formats, or a header no decoder could size). */
export class UnreadableImageError extends OcrInputError {
  constructor() {
    super('unsupported_media_type', 'The OCR data is not a PNG, JPEG, WebP, GIF, BMP or PNM image.');
    this.name = 'UnreadableImageError';
  }
}

/** An image declaring more pixels than an engine may decode (the api refuses it too). */
export class ImageTooLargeError extends OcrInputError {
  constructor(image: ImageDimensions, maxPixels: number) {
    super('file_too_large', oversizedImageMessage(image, maxPixels));
    this.name = 'ImageTooLargeError';
  }
}

/**
 * A read that outlasted the timeout. It is the image's doing (its size or detail), so it would time
 * out again: `file_too_large`, the code for input over a limit, with the limit in the message.
 */
export class OcrTimeoutError extends OcrInputError {
  constructor(timeoutMs: number) {
    super(
      'file_too_large',
      `OCR did not finish within ${Math.round(timeoutMs / 100) / 10} seconds: the image is too large or too detailed to read in time. Send it smaller or cropped.`,
    );
    this.name = 'OcrTimeoutError';
  }
}

export type TesseractOcrOptions = {
  /** Engines (worker threads) at most; reads beyond that wait for one, first come first served. */
  engines: number;
  /** The longest one recognition may take (waiting for an engine and starting one not counted). */
  timeoutMs: number;
  /** The most pixels an image may declare; default ocrMaxPixels. */
  maxPixels?: number;
};

// A tesseract worker holds ~100 MB once its languages are loaded: keep it between reads, end it when idle.
const idleTerminateMs = 60_000;
// WebAssembly memory grows and never shrinks: an engine that decoded a large image (measured: 40
// megapixels left one ~450 MB larger) is ended after that read rather than kept that large.
const retireAbovePixels = 12_000_000;

type Engine = {
  key: string;
  worker: Promise<Tesseract.Worker>;
  busy: boolean;
  /** Set when the engine is ended; its thread is terminated once it has started. */
  ended: boolean;
  idle?: NodeJS.Timeout;
};
type Waiter = { languages: OcrLanguage[]; grant(engine: Engine): void };

/** The worker thread behind a tesseract.js worker (not in its typings). */
function threadOf(worker: Tesseract.Worker): { ref(): void; unref(): void } | undefined {
  return (worker as unknown as { worker?: { ref(): void; unref(): void } }).worker;
}

/** `work`, or the abort reason as soon as `signal` aborts (`work` is left to settle unobserved). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/**
 * OCR with tesseract.js in a pool of at most `engines` worker threads, each loaded with one
 * language set and reused by reads of that set (an idle engine of another set is replaced when the
 * pool is full). Checks the image's declared size before any engine decodes it. A read that times
 * out or is cancelled ends its engine, since recognition cannot be interrupted any other way; the
 * next read then starts a fresh one, so one stuck image never holds more than its own engine.
 */
export function makeTesseractOcr(options: TesseractOcrOptions): OcrProvider & { close(): Promise<void> } {
  const maxPixels = options.maxPixels ?? ocrMaxPixels;
  const engines = new Set<Engine>();
  const waiting: Waiter[] = [];
  const closed = new AbortController();

  const end = (engine: Engine) => {
    engine.ended = true;
    engines.delete(engine);
    clearTimeout(engine.idle);
    void engine.worker.then((w) => w.terminate()).catch(() => {});
  };

  const start = (languages: OcrLanguage[]): Engine => {
    const worker = Tesseract.createWorker(languages, Tesseract.OEM.LSTM_ONLY, {
      langPath: tessdata(),
      cacheMethod: 'none',
      gzip: true,
      // Without a handler tesseract.js rethrows worker errors as uncaught exceptions.
      errorHandler: () => {},
    });
    // Awaited by the read that started it; this only keeps a failed start from being unhandled.
    worker.catch(() => {});
    const engine: Engine = { key: languages.join('+'), worker, busy: false, ended: false };
    engines.add(engine);
    return engine;
  };

  /** An engine for `languages` now, or undefined when every engine is busy. */
  const take = (languages: OcrLanguage[]): Engine | undefined => {
    const key = languages.join('+');
    const idle = [...engines].filter((e) => !e.busy);
    let engine = idle.find((e) => e.key === key);
    if (!engine) {
      if (engines.size >= options.engines) {
        const other = idle[0];
        if (!other) return undefined;
        end(other);
      }
      engine = start(languages);
    }
    clearTimeout(engine.idle);
    engine.busy = true;
    return engine;
  };

  const acquire = (languages: OcrLanguage[], signal: AbortSignal): Promise<Engine> => {
    const now = waiting.length === 0 ? take(languages) : undefined;
    if (now) return Promise.resolve(now);
    return new Promise<Engine>((resolve, reject) => {
      const stop = AbortSignal.any([signal, closed.signal]);
      if (stop.aborted) {
        reject(stop.reason as Error);
        return;
      }
      const waiter: Waiter = {
        languages,
        grant: (engine) => {
          stop.removeEventListener('abort', onAbort);
          resolve(engine);
        },
      };
      const onAbort = () => {
        waiting.splice(waiting.indexOf(waiter), 1);
        reject(stop.reason as Error);
      };
      stop.addEventListener('abort', onAbort, { once: true });
      waiting.push(waiter);
    });
  };

  const release = (engine: Engine, retire: boolean) => {
    if (retire) {
      end(engine);
    } else {
      engine.busy = false;
      // An idle engine must not keep the process alive: a stopping worker exits without waiting for it.
      void engine.worker.then((w) => threadOf(w)?.unref()).catch(() => {});
      engine.idle = setTimeout(() => end(engine), idleTerminateMs);
      engine.idle.unref();
    }
    // First come, first served: an engine (or room for one) goes to the longest waiting read.
    while (waiting.length > 0) {
      const next = take(waiting[0]!.languages);
      if (!next) break;
      waiting.shift()!.grant(next);
    }
  };

  return {
    async extract({ data, filename, languageHint, signal }) {
      const image = readImageDimensions(data);
      if (!image) throw new UnreadableImageError();
      if (image.pixels > maxPixels) throw new ImageTooLargeError(image, maxPixels);
      signal.throwIfAborted();
      closed.signal.throwIfAborted();
      const languages = resolveOcrLanguages(languageHint, filename);
      const engine = await acquire(languages, signal);
      // Recognition alone is timed: starting an engine (loading its languages) is not the image's doing.
      const deadline = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      let retire = image.pixels > retireAbovePixels;
      try {
        const read = engine.worker.then((worker) => {
          // Ended while it started (a cancellation, a close): tesseract.js would post to a dead thread.
          if (engine.ended) throw new ProviderError('the OCR engine was ended', true);
          threadOf(worker)?.ref();
          timer = setTimeout(() => deadline.abort(), options.timeoutMs);
          return worker.recognize(data);
        });
        const { data: out } = await unlessAborted(
          read,
          AbortSignal.any([signal, deadline.signal, closed.signal]),
        );
        return { text: out.text.replace(/\s+$/, ''), pages: 1, model: ocrModel, languages };
      } catch (error) {
        if (signal.aborted) {
          retire = true;
          throw signal.reason;
        }
        if (deadline.signal.aborted) {
          retire = true;
          throw new OcrTimeoutError(options.timeoutMs);
        }
        // A header that looked right over bytes leptonica cannot decode: retrying reads the same bytes.
        if (/read image|pix not read|not valid format/i.test(String(error))) throw new UnreadableImageError();
        retire = true;
        throw new ProviderError(`tesseract failed: ${String(error)}`, true, { cause: error });
      } finally {
        clearTimeout(timer);
        release(engine, retire);
      }
    },
    async close() {
      closed.abort(new ProviderError('the OCR engines were closed', true));
      for (const engine of [...engines]) end(engine);
    },
  };
}
